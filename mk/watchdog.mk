# mk/watchdog.mk — the dead-rank watchdog's corner cases (tests/watchdog/run.sh): a forked child,
# a crash in a forked child, a profiler's timer through hvd_init; each kills rank 1 for real.
.PHONY: test-watchdog

test-watchdog: $(BUILD)/tests/progs/prog_watchdog  ## the watchdog's corner cases: fork, EINTR (2 ranks, ~10 s)
	@BUILD=$(BUILD) MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)" sh tests/watchdog/run.sh
