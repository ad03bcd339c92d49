# mk/run.mk — targets of the run room (flags, metrics, progress output, trace); included by the
# Makefile. test_metrics averages over ranks, so it runs under mpirun -n 1..4.

MULTIRANK_TESTS += test_metrics

.PHONY: progress-demo

progress-demo: $(BUILD)/tests/test_progress  ## Keras-style progress output of a fake run (4 s)
	@$(BUILD)/tests/test_progress --demo
