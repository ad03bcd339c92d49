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

# The plots of chapter 11 (tools/scaling_plot.py, Debian's matplotlib: installed here only, not by
# make setup). scaling-plots draws every one from what make scaling, make ring-model,
# make scaling-training and make warmup-experiment left in results/; after a rerun of any of
# them, make scaling-plots re-draws. PLOTS_OUT: where the SVGs go (the lab text's images/).
.PHONY: scaling-plots scaling-training warmup-experiment test-scaling-plots
PLOTS_OUT ?= notebooks-md/images
PLOT = /usr/bin/python3 tools/scaling_plot.py
TRAINING_OUT ?= results/training
WARMUP_OUT ?= results/warmup
# WARMUP_FLAGS: options of tools/warmup_experiment.sh, e.g. --base-lr 0.02 --ranks 4
WARMUP_FLAGS ?=
WARMUP_PLOT = $(PLOT) training $(PLOTS_OUT)/scaling-warmup.svg --title "$$(cat $(WARMUP_OUT)/config.txt)" \
	  "$(WARMUP_OUT)/no-warmup.txt:no warmup" "$(WARMUP_OUT)/warmup.txt:warmup"

scaling-plots:  ## draw chapter 11's SVGs into notebooks-md/images from results/ (scaling, ring-model, training, warmup)
	@sh tools/setup.sh python3-matplotlib
	@for f in $(SCALING_OUT)/scaling.csv:scaling $(RING_MODEL_OUT)/predicted.csv:ring-model \
	  $(TRAINING_OUT)/ranks2.txt:scaling-training $(WARMUP_OUT)/warmup.txt:warmup-experiment; do \
	  [ -f $${f%%:*} ] || { echo "scaling-plots: $${f%%:*} is missing: run make $${f##*:} first" >&2; exit 1; }; done
	@mkdir -p $(PLOTS_OUT)
	$(PLOT) scaling $(SCALING_OUT) $(RING_MODEL_OUT)/fit.txt $(PLOTS_OUT)/scaling-speedup.svg
	$(PLOT) split $(SCALING_OUT) $(PLOTS_OUT)/scaling-split.svg
	$(PLOT) predicted $(RING_MODEL_OUT)/predicted.csv $(PLOTS_OUT)/scaling-predicted.svg
	$(PLOT) training $(PLOTS_OUT)/scaling-training-ranks.svg --title "solution09, 3 epochs, 12,000 images, --warmup-epochs 2" \
	  "$(TRAINING_OUT)/ranks1.txt:1 rank" "$(TRAINING_OUT)/ranks2.txt:2 ranks"
	$(PLOT) lr $(TRAINING_OUT)/trace-ranks2/rank-0.log $(PLOTS_OUT)/scaling-lr-step09.svg \
	  --steps-per-epoch $$(grep -a -m1 -o '[0-9]*/[0-9]* \[' $(TRAINING_OUT)/ranks2.txt | cut -d/ -f2 | cut -d' ' -f1) \
	  --title "step 9: 2 ranks, --base-lr 0.01, --warmup-epochs 2"
	$(WARMUP_PLOT)

scaling-training: solution09  ## solution 9 for 3 epochs on 1 and on 2 ranks (~5 min): logs and a trace in results/training
	@MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)" sh tools/scaling_training.sh --out $(TRAINING_OUT)

warmup-experiment: solution10  ## large-batch LR on 8 oversubscribed ranks with and without warmup (~4 min); logs in results/warmup, then the plot
	@MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)" sh tools/warmup_experiment.sh --out $(WARMUP_OUT) $(WARMUP_FLAGS)
	@sh tools/setup.sh python3-matplotlib
	$(WARMUP_PLOT)

# Runs from make test: skipped (exit 77, not a failure) when matplotlib is not installed.
test-scaling-plots:  ## the plotting tool on real study outputs: valid SVG, every series and label; bad input refused
	@/usr/bin/python3 tests/plots/test_scaling_plot.py; rc=$$?; [ $$rc = 0 ] || [ $$rc = 77 ]
