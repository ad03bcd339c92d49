#!/bin/sh
# run_graders.sh — proves the graders can tell: each tests/grade/grade_stepNN must PASS on
# solutions/stepNN.c and FAIL on the untouched steps/stepNN.c, and fail there on its own step's
# check (every earlier step passing), not because the program broke.
# Env: BUILD (build dir), MPIRUN (with flags). Ends with "graders: N passed, N failed".
set -u
cd "$(dirname "$0")/.." || exit 2
B=${BUILD:-build}
pass=0
fail=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for n in 01 02 03 04 05 06 07 08 09 10; do
    s=$(expr "$n" + 0)
    if "$B/tests/grade/grade_step$n" "$B/solutions/step$n" >"$out" 2>&1; then
        pass=$((pass + 1)); echo "grade$n on solutions/step$n.c: PASS ($(tail -1 "$out" | sed "s/.*, //")"
    else
        fail=$((fail + 1)); echo "grade$n on solutions/step$n.c: FAIL, expected PASS"; cat "$out"
    fi
    "$B/tests/grade/grade_step$n" "$B/steps/step$n" >"$out" 2>&1
    rc=$?
    own=$(grep -c "\[FAIL\] step $n:" "$out")
    earlier=$(grep "\[FAIL\]" "$out" | grep -vc "\[FAIL\] step $n:")
    if [ "$rc" -ne 0 ] && [ "$own" -eq 1 ] && [ "$earlier" -eq 0 ]; then
        pass=$((pass + 1))
        echo "grade$n on steps/step$n.c:     FAILS as it must: $(grep -m1 -A1 "\[FAIL\] step $n:" "$out" | tail -1 | sed 's/^ *//')"
    else
        fail=$((fail + 1))
        echo "grade$n on steps/step$n.c: expected to fail on step $s's check alone (exit $rc):"
        cat "$out"
    fi
done
echo "graders: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
