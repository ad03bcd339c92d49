# mk/faults.mk — the reliability appendix (notebooks-md/appendix-faults.md): faults tried on
# solution 10 for real by tests/faults/run_faults.sh, which prints the appendix's table.
#   make test-faults        every fault (about a minute); fails when a row of FAULTS_REQUIRE
#                           does not hold
#   make test-faults-quick  the rows marked (q), the ones that end in seconds (part of make test)
#   make faults-doc         every fault, and the table written into the appendix

FAULTS_BINS := $(BUILD)/solutions/step10 $(BUILD)/tests/progs/prog_fault_ops
FAULTS_ENV = BUILD=$(BUILD) MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)"

.PHONY: test-faults test-faults-quick faults-doc

test-faults: $(FAULTS_BINS)  ## try every fault of the reliability appendix for real and print its table
	@$(FAULTS_ENV) sh tests/faults/run_faults.sh

test-faults-quick: $(FAULTS_BINS)  ## the quick rows of make test-faults (part of make test)
	@$(FAULTS_ENV) sh tests/faults/run_faults.sh --quick

faults-doc: $(FAULTS_BINS)  ## run every fault and write the table into notebooks-md/appendix-faults.md
	@$(FAULTS_ENV) sh tests/faults/run_faults.sh --write-doc
