# mk/sanitize.mk — the lab's real program under the sanitizers (make asan-test runs only the unit
# and MPI tests there):
#   make asan-sol10   builds solution 10 with SANITIZE=1 into build/asan (build/ is left alone)
#                     and runs it under mpirun -n 2 for real: one epoch with checkpoints and
#                     every observer on, then a resume (tests/sanitize/run_sol10.sh); it must end
#                     with no ASan, UBSan or LSan report. Then the same on solution 10 with
#                     each fault of tests/sanitize/*.patch planted (a leak, an int overflow),
#                     which must fail with the report its "expect:" line names: the check can
#                     fail. About 30 s.

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

asan-sol10:  ## solution 10 under ASan+UBSan+LSan, 2 ranks, with a resume; and planted faults caught
	@$(MAKE) --no-print-directory CUDA=0 SANITIZE=1 BUILD=$(ASAN_BUILD) \
	  $(ASAN_BUILD)/solutions/step10 $(SAN_PLANTED:$(BUILD)/%=$(ASAN_BUILD)/%) >/dev/null
	@$(SAN_ENV) timeout 150 sh tests/sanitize/run_sol10.sh $(ASAN_BUILD)/solutions/step10
	@for p in $(SAN_PLANTED:$(BUILD)/sanitize/%=%); do \
	  log=$(ASAN_BUILD)/sanitize/$$p.log; \
	  want=$$(sed -n 's/^expect: //p' tests/sanitize/$$p.patch); \
	  $(SAN_ENV) timeout 150 sh tests/sanitize/run_sol10.sh $(ASAN_BUILD)/sanitize/$$p >$$log 2>&1; \
	  if [ $$? = 1 ] && grep -qF "$$want" $$log; then \
	    echo "asan-sol10: planted $$p: reported ($$want)"; \
	  else \
	    echo "asan-sol10: planted $$p: no report with '$$want':"; cat $$log; exit 1; \
	  fi; \
	done
