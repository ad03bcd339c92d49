# mk/grade_class.mk — grading a whole class (tools/grade_class.sh; notebooks-md's instructors'
# chapter says how to use it). The trusted side is built here: the runtime, the graders and the
# solutions; the students' code is compiled and run in the sandbox (tools/sandbox/run.sh), which
# needs Debian's bubblewrap (installed here as make test installs what it needs).
.PHONY: grade-class test-grade-class

grade-class: $(LIB) $(GRADER_BIN) $(SOLUTION_BIN)  ## grade a class: SUBMISSIONS=DIR [OUT=grades] [STEPS="01 02 ..."] [SEED=n] [JOBS=n]
	@sh tools/setup.sh bubblewrap >/dev/null
	@GRADE_CFLAGS="$(PKG_CFLAGS)" GRADE_LDLIBS="$(LDLIBS)" BUILD=$(BUILD) sh tools/grade_class.sh \
	  --submissions "$(SUBMISSIONS)" --out "$(or $(OUT),grades)" --steps "$(STEPS)" \
	  --seed "$(or $(SEED),1)" --jobs "$(or $(JOBS),1)"

# Bad input and a stopped run (tests/grade/class_input_test.sh), then the sandbox against hostile
# submissions: a class of them contained and failed or flagged, and each piece of the sandbox
# shown to matter (tests/grade/hostile_test.sh). Root only (they skip otherwise); about 5 min on
# 2 loaded cores.
test-grade-class: $(LIB) $(GRADER_BIN) $(SOLUTION_BIN)  ## grade-class: bad input, a stopped run, hostile submissions contained and failed or flagged, each sandbox piece shown to matter
	@sh tools/setup.sh bubblewrap >/dev/null
	@BUILD=$(BUILD) $(TIMEOUT) 120 sh tests/grade/class_input_test.sh
	@BUILD=$(BUILD) $(TIMEOUT) 600 sh tests/grade/hostile_test.sh
