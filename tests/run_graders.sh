#!/bin/sh
# run_graders.sh — proves the graders can tell: each tests/grade/grade_stepNN must PASS on
# solutions/stepNN.c and FAIL on the untouched steps/stepNN.c, and fail there on its own step's
# check (every earlier step passing), not because the program broke.
# Env: BUILD (build dir), MPIRUN (with flags), GRADE_JOBS (steps graded at once, default 1: the
# graders have no timed checks, but two jobs on the 2-core workshop machine only slow each
# other; make gpu-check runs several on the GPU machine's 16 cores, where serial grading took
# 107 of its 480 s). The report comes out in step order whatever finished first.
# Ends with "graders: N passed, N failed".
set -u
cd "$(dirname "$0")/.." || exit 2
B=${BUILD:-build}
JOBS=${GRADE_JOBS:-1}
case $JOBS in '' | *[!0-9]* | 0) echo "run_graders.sh: GRADE_JOBS=$JOBS: expected a number of steps >= 1"; exit 2 ;; esac
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# Both verdicts of step $1: the report's lines into $dir/$1.report, the failures' count into
# $dir/$1.failed.
grade_step() {
    n=$1
    s=$(expr "$n" + 0)
    out=$dir/$n.out
    rep=$dir/$n.report
    failed=0
    if "$B/tests/grade/grade_step$n" "$B/solutions/step$n" >"$out" 2>&1; then
        echo "grade$n on solutions/step$n.c: PASS ($(tail -1 "$out" | sed "s/.*, //")" >"$rep"
    else
        failed=$((failed + 1))
        { echo "grade$n on solutions/step$n.c: FAIL, expected PASS"; cat "$out"; } >"$rep"
    fi
    "$B/tests/grade/grade_step$n" "$B/steps/step$n" >"$out" 2>&1
    rc=$?
    own=$(grep -c "\[FAIL\] step $n:" "$out")
    earlier=$(grep "\[FAIL\]" "$out" | grep -vc "\[FAIL\] step $n:")
    if [ "$rc" -ne 0 ] && [ "$own" -eq 1 ] && [ "$earlier" -eq 0 ]; then
        echo "grade$n on steps/step$n.c:     FAILS as it must: $(grep -m1 -A1 "\[FAIL\] step $n:" "$out" | tail -1 | sed 's/^ *//')" >>"$rep"
    else
        failed=$((failed + 1))
        { echo "grade$n on steps/step$n.c: expected to fail on step $s's check alone (exit $rc):"; cat "$out"; } >>"$rep"
    fi
    echo "$failed" >"$dir/$n.failed"
}

running=0
for n in 01 02 03 04 05 06 07 08 09 10; do
    if [ "$JOBS" -eq 1 ]; then
        (grade_step "$n")
        cat "$dir/$n.report" # as each step ends, as before
        continue
    fi
    grade_step "$n" &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then
        wait
        running=0
    fi
done
wait
pass=0
fail=0
for n in 01 02 03 04 05 06 07 08 09 10; do
    [ "$JOBS" -eq 1 ] || cat "$dir/$n.report" 2>/dev/null
    f=$(cat "$dir/$n.failed" 2>/dev/null || echo 2) # no count: the step's grading itself broke
    fail=$((fail + f))
    pass=$((pass + 2 - f))
done
echo "graders: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
