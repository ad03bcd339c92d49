#!/bin/sh
# reference_test.sh — the class mode's graded sizes and reference run, on step 01:
#   tools/grade_sizes.sh SEED prints the same sizes for the same SEED, refuses a bad SEED;
#   the grader takes them (GRADE_SIZES_FILE: its first line names them), refuses a file out of
#   range with one line; the solution graded with GRADE_WORK_DIR leaves the reference run;
#   graded again against it (GRADE_REFERENCE_TRACE) it passes with no flag; the forged step 01
#   (forged/step01.c: no hvd_init, no MPI, two made-up trace lines) is flagged "trace disagrees
#   with the reference run", on stdout and in GRADE_RESULT_FILE.
# Env: BUILD (build dir), MPIRUN (with flags), MPICC. Ends with "reference: N passed, N failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
kit=$(cd "$here/../../.." && pwd)
B=$(cd "$kit/${BUILD:-build}" && pwd) || exit 2
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "reference $1: ok"; }
bad() { fail=$((fail + 1)); echo "reference $1: WRONG: $2"; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

# Sizes: fixed by SEED (these figures are quoted in notebooks-md/grading-a-class.md).
sh "$kit/tools/grade_sizes.sh" 7 >"$t/sizes"
want='np=2 train_n=768 test_n=192 batch=48 epochs=2 warmup=1 base_lr=0.01 seed=7'
if [ "$(tr '\n' ' ' <"$t/sizes" | sed 's/ $//')" = "$want" ]; then ok "sizes of SEED 7: $want"
else bad "sizes of SEED 7" "$(tr '\n' ' ' <"$t/sizes"), expected $want"; fi
if sh "$kit/tools/grade_sizes.sh" 2147483648 >/dev/null 2>"$t/err" || [ "$(wc -l <"$t/err")" -ne 1 ]; then
    bad "SEED 2147483648" "accepted, or not one line: $(cat "$t/err")"
else ok "SEED 2147483648 refused: $(cat "$t/err")"; fi
printf 'np=2\ntrain_n=100\n' >"$t/bad"
GRADE_SIZES_FILE=$t/bad "$B/tests/grade/grade_step01" "$B/solutions/step01" >"$t/out" 2>&1
rc=$?
if [ "$rc" -eq 2 ] && [ "$(wc -l <"$t/out")" -eq 1 ] && grep -q "bad:2: train_n=100: expected" "$t/out"; then
    ok "sizes out of range: exit 2, $(cat "$t/out")"
else bad "sizes out of range" "exit $rc: $(cat "$t/out")"; fi

# The reference run: the kit's solution with these sizes, kept.
GRADE_SIZES_FILE=$t/sizes GRADE_WORK_DIR=$t/ref01 "$B/tests/grade/grade_step01" "$B/solutions/step01" >"$t/out" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && grep -q "768 training images, 192 test, batch 48" "$t/out" && [ -d "$t/ref01/trace-a" ]; then
    ok "reference run of solution 01 kept in GRADE_WORK_DIR"
else bad "reference run" "exit $rc: $(cat "$t/out")"; fi

GRADE_SIZES_FILE=$t/sizes GRADE_REFERENCE_TRACE=$t/ref01 GRADE_RESULT_FILE=$t/res.sol \
    "$B/tests/grade/grade_step01" "$B/solutions/step01" >"$t/out" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && ! grep -q FLAG "$t/out" && ! grep -q '^flag' "$t/res.sol"; then
    ok "solution 01 against the reference: PASS, no flag"
else bad "solution 01 against the reference" "exit $rc: $(cat "$t/out")"; fi

${MPICC:-mpicc} -std=c11 -o "$t/forged01" "$here/forged/step01.c" >"$t/cc" 2>&1 || bad "forged build" "$(cat "$t/cc")"
GRADE_SIZES_FILE=$t/sizes GRADE_REFERENCE_TRACE=$t/ref01 GRADE_RESULT_FILE=$t/res.forged \
    "$B/tests/grade/grade_step01" "$t/forged01" >"$t/out" 2>&1
rc=$?
if grep -q "\[FLAG\] trace disagrees with the reference run (run a: rank 0 made no optimizer step" "$t/out" &&
   grep -q "^flag	trace disagrees with the reference run" "$t/res.forged"; then
    ok "forged step 01 flagged (exit $rc): $(grep -m1 FLAG "$t/out" | sed 's/^ *//')"
else bad "forged step 01" "not flagged (exit $rc): $(cat "$t/out")"; fi
echo "reference: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
