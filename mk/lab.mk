# mk/lab.mk — the lab: exercises (steps/), solutions (solutions/), graders (tests/grade/).
#   make step05      builds ./step05 from steps/step05.c        (the student's exercise)
#   make solution05  builds ./solution05 from solutions/step05.c
#   make diff05      what is left to do: diff -u steps/step05.c solutions/step05.c
#   make grade05     builds ./step05 and grades it;   make grade   the table of all ten
#   make check-steps the exercise/solution relation;  make lab-test   graders pass on solutions
#                    and fail on the untouched exercises, and judge the planted answers of
#                    tests/grade/planted/ right (part of make test)

# not STEPS: that is make timeline-image's option
LAB_STEPS := 01 02 03 04 05 06 07 08 09 10
STEP_BIN := $(LAB_STEPS:%=$(BUILD)/steps/step%)
SOLUTION_BIN := $(LAB_STEPS:%=$(BUILD)/solutions/step%)
GRADER_BIN := $(LAB_STEPS:%=$(BUILD)/tests/grade/grade_step%)
GRADE_OBJ := $(BUILD)/tests/grade/grade.o $(BUILD)/tests/grade/grade_checks.o \
             $(BUILD)/tests/grade/grade_sizes.o $(BUILD)/tests/grade/grade_reference.o \
             $(BUILD)/tests/lib/file_io.o
GRADE_ENV = MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)"
# Planted student answers: tests/grade/planted/stepNN-what.patch applied to solutions/stepNN.c.
PLANTED := $(patsubst tests/grade/planted/%.patch,$(BUILD)/planted/%,\
             $(wildcard tests/grade/planted/*.patch))

.PHONY: lab graders grade check-steps lab-graders lab-planted lab-test timeline-image lab-images \
        lab-images-draw $(LAB_STEPS:%=step%) $(LAB_STEPS:%=solution%) $(LAB_STEPS:%=diff%) \
        $(LAB_STEPS:%=grade%)

lab: $(STEP_BIN) $(SOLUTION_BIN) $(GRADER_BIN)  ## build every exercise, solution and grader
graders: $(GRADER_BIN)

$(BUILD)/steps/step%: $(BUILD)/steps/step%.o $(LIB)
	$(CC) $(LDFLAGS) $< $(LIB) $(LDLIBS) -o $@
$(BUILD)/solutions/step%: $(BUILD)/solutions/step%.o $(LIB)
	$(CC) $(LDFLAGS) $< $(LIB) $(LDLIBS) -o $@
$(BUILD)/planted/%.c: tests/grade/planted/%.patch
	@mkdir -p $(@D)
	patch -s -o $@ solutions/$(firstword $(subst -, ,$*)).c $<
$(BUILD)/planted/%.o: $(BUILD)/planted/%.c
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@
$(PLANTED): $(BUILD)/planted/%: $(BUILD)/planted/%.o $(LIB)
	$(CC) $(LDFLAGS) $< $(LIB) $(LDLIBS) -o $@
.PRECIOUS: $(BUILD)/planted/%.c
# grade_stepNN: the one grader source, grade_main.c, built with -DGRADE_STEP=N (no leading 0:
# 08 would be an octal literal).
$(GRADER_BIN:%=%.o): $(BUILD)/tests/grade/grade_step%.o: tests/grade/grade_main.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -DGRADE_STEP=$(patsubst 0%,%,$*) -c $< -o $@
$(GRADER_BIN): $(BUILD)/tests/grade/grade_step%: $(BUILD)/tests/grade/grade_step%.o $(GRADE_OBJ)
	$(CC) $(LDFLAGS) $< $(GRADE_OBJ) $(CHECK_LIBS) -lm -o $@

# make stepNN / solutionNN / diffNN / gradeNN, one set per step.
define LAB_STEP_RULES
step$(1): $(BUILD)/steps/step$(1)
	@cmp -s $$< $$@ || cp $$< $$@
	@echo "built ./step$(1)  (run: mpirun -n 2 ./step$(1))"
solution$(1): $(BUILD)/solutions/step$(1)
	@cmp -s $$< $$@ || cp $$< $$@
	@echo "built ./solution$(1)  (run: mpirun -n 2 ./solution$(1))"
diff$(1):
	@diff -u steps/step$(1).c solutions/step$(1).c && echo "steps/step$(1).c is the same as the solution" || true
grade$(1): step$(1) $(BUILD)/tests/grade/grade_step$(1)
	@$(GRADE_ENV) $(BUILD)/tests/grade/grade_step$(1) ./step$(1)
endef
$(foreach n,$(LAB_STEPS),$(eval $(call LAB_STEP_RULES,$(n))))


grade: $(GRADER_BIN)  ## grade all ten steps of your steps/ tree: a PASS/FAIL table
	@$(GRADE_ENV) MAKE="$(MAKE)" sh tools/grade_all.sh

check-steps:  ## check that each exercise is the previous solution plus its TODO markers
	@sh tools/check_steps.sh

# lab-test in three links run one after the other (each needs the one before; under make -j
# two MPI suites at once would slow each other's timed checks): lab-graders, lab-planted, then
# the timeline plot. On the GPU machine, which has no package registry (no matplotlib to install)
# and may have no patch program, make gpu-check runs the first and make gpu-planted the second.
lab-graders: $(STEP_BIN) $(SOLUTION_BIN) $(GRADER_BIN)  ## graders pass on every solution and fail on every exercise
	@sh tools/check_steps.sh
	@$(GRADE_ENV) BUILD=$(BUILD) sh tests/run_graders.sh

lab-planted: $(PLANTED) $(GRADER_BIN) | lab-graders  ## graders judge the planted answers of tests/grade/planted/ right
	@$(GRADE_ENV) BUILD=$(BUILD) sh tests/grade/run_planted.sh

# The planted answers' programs and the graders, built only (make gpu-planted runs them apart from
# the graders' own run).
.PHONY: planted-programs
planted-programs: $(PLANTED) $(GRADER_BIN)

lab-test: lab-planted  ## graders: pass on every solution, fail on every exercise, judge the planted answers right
	@sh tools/setup.sh python3-matplotlib >/dev/null
	@$(GRADE_ENV) BUILD=$(BUILD) sh tests/grade/timeline_plot_test.sh
	@$(MAKE) --no-print-directory test-grade-reports test-grade-screen test-grade-reference test-grade-class-fixture

# Timelines as images (tools/timeline_plot.py, matplotlib): for a terminal with no browser.
TIMELINE ?= timeline.json
timeline-image:  ## draw an HVD_TIMELINE file as an image: TIMELINE=t.json [OUT=t.png|t.svg] [STEP=n] [STEPS=1] [ZOOM=1]
	@sh tools/setup.sh python3-matplotlib
	/usr/bin/python3 tools/timeline_plot.py $(TIMELINE) $(or $(OUT),$(TIMELINE:.json=.png)) \
	  --step $(or $(STEP),0) --steps $(or $(STEPS),1) $(if $(ZOOM),--zoom)

# The lab text's timeline images, from the runs chapters 0 and 3 describe (about 2 minutes).
LAB_IMG := notebooks-md/images
lab-images: solution03 solution05  ## redraw notebooks-md/images/timeline-*.png from real runs
	@sh tools/setup.sh python3-matplotlib
	@mkdir -p $(BUILD)/lab-images
	HVD_TIMELINE=$(BUILD)/lab-images/fusion.json ./hvdrun -n 2 ./solution05 --epochs 1 >/dev/null
	HVD_FUSION_THRESHOLD=0 HVD_TIMELINE=$(BUILD)/lab-images/nofusion.json \
	  ./hvdrun -n 2 ./solution05 --epochs 1 >/dev/null
	HVD_TIMELINE=$(BUILD)/lab-images/step03.json ./hvdrun -n 2 ./solution03 --epochs 1 >/dev/null
	$(MAKE) --no-print-directory lab-images-draw

lab-images-draw:  # the images from the timelines lab-images wrote (typical step, allreduces)
	/usr/bin/python3 tools/timeline_plot.py $(BUILD)/lab-images/fusion.json --zoom \
	  $(LAB_IMG)/timeline-fusion.png --title "./solution05, fusion on (64 MiB): the allreduces of a typical step"
	/usr/bin/python3 tools/timeline_plot.py $(BUILD)/lab-images/nofusion.json --zoom \
	  $(LAB_IMG)/timeline-nofusion.png --title "./solution05, HVD_FUSION_THRESHOLD=0: the allreduces of a typical step"
	/usr/bin/python3 tools/timeline_plot.py $(BUILD)/lab-images/step03.json --zoom \
	  $(LAB_IMG)/timeline-step03.png --title "./step03 (finished), 2 ranks: the allreduces of a typical step"
