# mk/sanitize.mk — the lab's real program under the sanitizers (make asan-test runs only the unit
# and MPI tests there):
#   make asan-sol10   builds solution 10 with SANITIZE=1 into build/asan (build/ is left alone)
#                     and runs it under mpirun -n 2 for real: one epoch with checkpoints and
#                     every observer on, then a resume (tests/sanitize/run_sol10.sh); it must end
#                     with no ASan, UBSan or LSan report. Then the same on solution 10 with a
#                     leak planted (tests/sanitize/step10-leak.patch), which must fail naming
#                     the leak: the check shows it can fail. About a minute.

ASAN_BUILD := build/asan
# Planted faults: tests/sanitize/stepNN-what.patch applied to solutions/stepNN.c.
SAN_PLANTED := $(patsubst tests/sanitize/%.patch,$(BUILD)/sanitize/%,\
                 $(wildcard tests/sanitize/*.patch))
SAN_ENV = MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)"

.PHONY: asan-sol10

$(BUILD)/sanitize/%.c: tests/sanitize/%.patch
	@mkdir -p $(@D)
	patch -s -o $@ solutions/$(firstword $(subst -, ,$*)).c $<
$(BUILD)/sanitize/%.o: $(BUILD)/sanitize/%.c
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@
$(SAN_PLANTED): $(BUILD)/sanitize/%: $(BUILD)/sanitize/%.o $(LIB)
	$(CC) $(LDFLAGS) $< $(LIB) $(LDLIBS) -o $@
.PRECIOUS: $(BUILD)/sanitize/%.c

asan-sol10:  ## solution 10 under ASan+UBSan+LSan, 2 ranks, with a resume; and a planted leak caught
	@$(MAKE) --no-print-directory CUDA=0 SANITIZE=1 BUILD=$(ASAN_BUILD) $(ASAN_BUILD)/solutions/step10 \
	  $(ASAN_BUILD)/sanitize/step10-leak >/dev/null
	@$(SAN_ENV) timeout 150 sh tests/sanitize/run_sol10.sh $(ASAN_BUILD)/solutions/step10
	@$(SAN_ENV) timeout 150 sh tests/sanitize/run_sol10.sh $(ASAN_BUILD)/sanitize/step10-leak \
	  >$(ASAN_BUILD)/sanitize/step10-leak.log 2>&1; \
	if [ $$? = 1 ] && grep -q 'LeakSanitizer' $(ASAN_BUILD)/sanitize/step10-leak.log && \
	   grep -q 'lab_batch_labels' $(ASAN_BUILD)/sanitize/step10-leak.log; then \
	  echo "asan-sol10: the planted leak (tests/sanitize/step10-leak.patch) was reported"; \
	else \
	  echo "asan-sol10: the planted leak was not reported as it should be:"; \
	  cat $(ASAN_BUILD)/sanitize/step10-leak.log; exit 1; \
	fi
