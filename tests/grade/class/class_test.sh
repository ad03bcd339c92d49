#!/bin/sh
# class_test.sh — a fixture class graded as an instructor grades one: make grade-class on five
# students, steps 01 and 03, SEED=7, then every report read back by its reader and compared with
# class.expected (report_test.sh OUT EXPECTED: the CSV, Gradescope's fields in results.json,
# junit.xml against junit.xsd, the page in headless Chromium).
#   full       the kit's solutions (all ten files)
#   exercises  the untouched exercises
#   planted    planted wrong answers: step01-pin-device-0, step03-average-twice
#   hostile    the forged step 01 (forged/step01.c); a step 03 that includes ../solutions/step03.c;
#              a Makefile and a link beside them (ignored, listed in ignored.txt)
#   missing    step 01 only
# Env: MAKE. Ends with "class: N passed, N failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
kit=$(cd "$here/../../.." && pwd)
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "class $1: ok"; }
bad() { fail=$((fail + 1)); echo "class $1: WRONG: $2"; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
s=$t/submissions
mkdir -p "$s/full/steps" "$s/exercises" "$s/planted" "$s/hostile" "$s/missing"
cp "$kit"/solutions/step*.c "$s/full/steps/"
cp "$kit"/steps/step*.c "$s/exercises/"
patch -s -o "$s/planted/step01.c" "$kit/solutions/step01.c" "$kit/tests/grade/planted/step01-pin-device-0.patch"
patch -s -o "$s/planted/step03.c" "$kit/solutions/step03.c" "$kit/tests/grade/planted/step03-average-twice.patch"
cp "$here/forged/step01.c" "$s/hostile/"
printf '#include "../solutions/step03.c"\n' >"$s/hostile/step03.c"
printf 'all:\n\tcp ../../solutions/step01.c step01.c\n' >"$s/hostile/Makefile"
ln -s "$kit/solutions/step02.c" "$s/hostile/step02.c"
cp "$kit/solutions/step01.c" "$s/missing/"

t0=$(date +%s)
# 150 s a run, not 30: this test checks verdicts, not the time limit (hostile_test.sh does), and
# make test may share the 2 cores with other work (seen: the untouched step 01, 15 s alone, timed
# out at 30 s and at 90 s with a load average of 26; alone in the sandbox then it took 45 s).
(cd "$kit" && GRADE_RUN_LIMIT_S=150 ${MAKE:-make} --no-print-directory grade-class SUBMISSIONS="$s" OUT="$t/out" \
    STEPS="01 03" SEED=7) >"$t/log" 2>&1
rc=$?
secs=$(($(date +%s) - t0))
sed 's/^/    /' "$t/log"
if [ "$rc" -eq 0 ]; then ok "make grade-class: exit 0 in $secs s"
else bad "make grade-class" "exit $rc"; fi
if grep -q "step02.c" "$t/out/hostile/ignored.txt" 2>/dev/null && grep -q Makefile "$t/out/hostile/ignored.txt"; then
    ok "hostile's link and Makefile ignored and listed"
else bad "ignored.txt" "$(cat "$t/out/hostile/ignored.txt" 2>&1)"; fi
if sh "$here/report_test.sh" "$t/out" "$here/class.expected" >"$t/check" 2>&1; then
    ok "reports match class.expected ($(tail -1 "$t/check"))"
else bad "reports" "$(cat "$t/check")"; fi
echo "class: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
