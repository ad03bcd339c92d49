# mk/optim.mk — the optimizer room's targets (optimizers, distributed optimizer, LR schedules);
# included by the Makefile.

MULTIRANK_TESTS += test_distributed

.PHONY: novograd-fixture optim-tests

novograd-fixture:  ## regenerate tests/fixtures/novograd-*.txt with the NumPy reference
	/usr/bin/python3 tests/reference/novograd_ref.py tests/fixtures

OPTIM_TESTS := $(BUILD)/tests/test_optim $(BUILD)/tests/test_lr $(BUILD)/tests/test_distributed

optim-tests: $(OPTIM_TESTS)  ## run the optimizer and LR tests (test_distributed: mpirun -n 1..4)
	@MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)" MULTIRANK="test_distributed" sh tests/run_unit.sh $^
