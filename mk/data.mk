# mk/data.mk — targets of common/data/ (IDX reader, dataset, loader); included by the Makefile.
# Uses $(BUILD), $(LIB) and friends from the top Makefile.

FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang
FUZZ_FLAGS := -std=c11 -g -O1 -D_GNU_SOURCE -Icommon -Wall -Wextra -Werror \
              -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_IDX := $(BUILD)/fuzz/fuzz_idx

.PHONY: fuzz-idx

# libFuzzer build: clang, not mpicc; the parser alone (data/idx.c, base/errmsg.c) plus zlib.
FUZZ_SRC := common/data/idx.c common/data/idx_source.c common/base/errmsg.c
$(FUZZ_IDX): tests/fuzz/fuzz_idx.c $(FUZZ_SRC) common/data/idx.h common/data/idx_source.h \
              common/base/errmsg.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) tests/fuzz/fuzz_idx.c $(FUZZ_SRC) -lz -o $@

fuzz-idx: $(FUZZ_IDX)  ## fuzz the IDX parser (libFuzzer, ASan+UBSan) for FUZZ_SECONDS s (default 60)
	@rm -rf tests/fuzz/corpus-run && mkdir -p tests/fuzz/corpus-run
	@echo "fuzz-idx: $(FUZZ_SECONDS) s, seeds tests/fuzz/corpus, log $(FUZZ_IDX).log"
	@$(FUZZ_IDX) -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -print_final_stats=1 \
	  -artifact_prefix=$(BUILD)/fuzz/ tests/fuzz/corpus-run tests/fuzz/corpus \
	  > $(FUZZ_IDX).log 2>&1; rc=$$?; \
	grep -E '^(INFO: seed corpus|#[0-9]+ +(INITED|DONE)|Done [0-9]+ runs|stat::|==[0-9]+==ERROR|SUMMARY)' \
	  $(FUZZ_IDX).log; \
	runs=$$(sed -n 's/^stat::number_of_executed_units: *//p' $(FUZZ_IDX).log); \
	if [ $$rc -eq 0 ]; then echo "fuzz-idx: $${runs:-?} executions in $(FUZZ_SECONDS) s, no crash"; \
	else echo "fuzz-idx: FAILED (exit $$rc), reproducer in $(BUILD)/fuzz/, see $(FUZZ_IDX).log"; fi; \
	exit $$rc

