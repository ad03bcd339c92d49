# mk/optim.mk — targets of common/optim/ (optimizers, distributed optimizer, LR schedules);
# included by the Makefile.

.PHONY: novograd-fixture optim-tests

novograd-fixture:  ## regenerate tests/fixtures/novograd-*.txt with the NumPy reference
	/usr/bin/python3 tests/reference/novograd_ref.py tests/fixtures

OPTIM_TESTS := $(BUILD)/tests/unit/test_optim $(BUILD)/tests/unit/test_lr \
               $(BUILD)/tests/mpi/test_distributed $(BUILD)/tests/mpi/test_loss_scale

optim-tests: $(OPTIM_TESTS)  ## run the optimizer and LR tests (test_distributed, test_loss_scale: mpirun -n 1..4)
	@MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)" sh tests/run_unit.sh $^
