# mk/scaling.mk — chapter 11's study: scaling runs, the ring model, the plots. Included by the
# Makefile; uses $(BUILD), $(MPIRUN), $(MPIRUN_FLAGS).
# SCALING_FLAGS: options of tools/scaling.sh, e.g. --model wrn-16-4 --batch 256 --ranks 1,2,4,8

SCALING_FLAGS ?=
SCALING_OUT ?= results/scaling

.PHONY: scaling scaling-quick

# The unit tests run the quick study, so building them builds its program.
tests: $(BUILD)/bench/scaling

scaling: $(BUILD)/bench/scaling  ## strong and weak scaling at W = 1, 2, 4 ranks: G, C(W) from HVD_PROFILE, speedup, efficiency (CSV in results/scaling)
	@BUILD=$(BUILD) MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)" sh tools/scaling.sh --out $(SCALING_OUT) $(SCALING_FLAGS)

scaling-quick: $(BUILD)/bench/scaling  ## the scaling study in seconds (W = 1, 2, 2 steps): checks the plumbing, not the numbers
	@BUILD=$(BUILD) MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)" sh tools/scaling.sh --quick --out $(SCALING_OUT)-quick
