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

.PHONY: ring-model
RING_MODEL_OUT ?= results/ring-model

# The unit tests check the fit, so building them builds the tool.
tests: $(BUILD)/tools/ringmodel

ring-model: $(BUILD)/tools/ringmodel $(BUILD)/bench/allreduce  ## fit the alpha-beta ring model to bench-allreduce here, predict C(W) and efficiency to 4096 workers, compare with published runs
	@mkdir -p $(RING_MODEL_OUT)
	$(MPIRUN) $(MPIRUN_FLAGS) -n 2 $(BUILD)/bench/allreduce > $(RING_MODEL_OUT)/bench-allreduce.txt
	@# field 16: the ring's median time (bench/allreduce's "ring" columns), not the default path's
	@awk '/^  +[0-9]+[KM] +[0-9]+ \|/ { print $$2 * 4, $$16 / 1e6 }' \
	  $(RING_MODEL_OUT)/bench-allreduce.txt > $(RING_MODEL_OUT)/timings.txt
	$(BUILD)/tools/ringmodel fit $(RING_MODEL_OUT)/timings.txt | tee $(RING_MODEL_OUT)/fit.txt
	$(BUILD)/tools/ringmodel predict $$(awk '/^alpha_s/ { printf "--alpha %s ", $$2 } /^beta_s/ { printf "--beta %s", $$2 }' $(RING_MODEL_OUT)/fit.txt) --csv $(RING_MODEL_OUT)/predicted.csv
	$(BUILD)/tools/ringmodel published
