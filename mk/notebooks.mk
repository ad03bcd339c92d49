# mk/notebooks.mk — the lab text (notebooks-md/), docs/, README.md and DEVELOPERS.md: make
# check-docs checks that every command in them still works (make targets with make -n, program
# command lines with --help) and that the code a chapter quotes is still in steps/ and
# solutions/. See tools/check_docs.sh.

DOCS_BINS := $(foreach n,01 02 03 04 05 06 07 08 09 10,$(BUILD)/steps/step$(n) $(BUILD)/solutions/step$(n))

.PHONY: check-docs

check-docs: $(DOCS_BINS)  ## check every command, link and quoted line of code in notebooks-md/, docs/, README.md, DEVELOPERS.md
	@BUILD=$(BUILD) MAKE="$(MAKE)" sh tools/check_docs.sh
