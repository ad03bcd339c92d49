# mk/class_reports.mk — the class mode's forgery screen (tools/grade_screen.sh) on a small class
# made by its test, and its reports (tools/grade_report.sh: Gradescope JSON, JUnit, CSV, HTML)
# checked as their readers read them, from a fixture class's verdicts.
.PHONY: test-grade-reports

test-grade-reports:  ## class reports: results.json against Gradescope's fields, junit.xml against a JUnit schema, the CSV, the page's grid from headless Chromium's DOM; partial and bad verdicts
	@sh tools/setup.sh python3 libxml2-utils chromium >/dev/null
	@sh tests/grade/class/report_test.sh

.PHONY: test-grade-screen
test-grade-screen: lib  ## class mode's forgery screen: includes, denied calls (nm -u), copies of the reference or of another student
	@sh tests/grade/class/screen_test.sh

.PHONY: test-grade-reference
test-grade-reference: $(BUILD)/tests/grade/grade_step01 $(BUILD)/solutions/step01  ## class mode's graded sizes from SEED and the reference run: the solution agrees, the forged step 01 is flagged
	@$(GRADE_ENV) BUILD=$(BUILD) sh tests/grade/class/reference_test.sh

.PHONY: test-grade-class-fixture
test-grade-class-fixture:  ## a fixture class of five (solutions, exercises, planted, hostile, missing steps) through make grade-class, its reports compared with the expected verdicts
	@sh tools/setup.sh python3 libxml2-utils chromium >/dev/null
	@MAKE="$(MAKE)" sh tests/grade/class/class_test.sh
