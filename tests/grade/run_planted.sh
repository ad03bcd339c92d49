#!/bin/sh
# run_planted.sh — the graders' regression tests: plausible student answers, right and wrong,
# planted into the solutions (tests/grade/planted/stepNN-what.patch, applied by mk/lab.mk to
# solutions/stepNN.c and built as BUILD/planted/stepNN-what). Each patch's header says which
# grader judges it and what it must say:
#   # grade: NN            grade_stepNN judges it
#   # expect: PASS|FAIL    the verdict (exit 0 / 1)
#   # message: TEXT        a line of the grader's output must contain TEXT (a failing verdict:
#                          in the first [FAIL] block, the one the student reads first)
#   # absent: TEXT         optional: no line of the grader's output may contain TEXT (advice
#                          that is wrong for this answer, e.g. an earlier step's)
#   # within: S            optional: the grader answers within S seconds
#   # env: VAR=VALUE       optional: the grader's environment
# Then no process of the planted program may be left running. Last, a hung answer is graded and
# the grader gets SIGINT (Ctrl-C): it must stop at once and leave nothing running.
# Env: BUILD (build dir), MPIRUN (with flags). Ends with "planted answers: N passed, N failed".
set -u
cd "$(dirname "$0")/../.." || exit 2
# Absolute: the leftover check below matches processes by their command line, and a relative
# path would also match the planted programs of another checkout running at the same time.
B=$(cd "${BUILD:-build}" && pwd) || exit 2
pass=0
fail=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT
field() { sed -n "s/^# $1: //p" "$2" | head -1; }
ok() { pass=$((pass + 1)); echo "planted $1: $2"; }
bad() { fail=$((fail + 1)); echo "planted $1: WRONG: $2"; sed 's/^/    /' "$out"; }
running() { pgrep -f "$1" >/dev/null 2>&1; }

for patch in tests/grade/planted/*.patch; do
    name=$(basename "$patch" .patch)
    bin=$B/planted/$name
    n=$(field grade "$patch")
    expect=$(field expect "$patch")
    message=$(field message "$patch")
    within=$(field within "$patch")
    absent=$(field absent "$patch")
    envs=$(field env "$patch")
    t0=$(date +%s)
    # shellcheck disable=SC2086
    env $envs "$B/tests/grade/grade_step$n" "$bin" >"$out" 2>&1
    rc=$?
    secs=$(($(date +%s) - t0))
    verdict=$([ "$rc" -eq 0 ] && echo PASS || echo FAIL)
    if [ "$expect" = FAIL ]; then # the message in the first [FAIL] block
        shown=$(sed -n '/\[FAIL\]/,$p' "$out" | sed -n '1p;2,${/\[FAIL\]\|\[PASS\]/q;p}')
    else
        shown=$(cat "$out")
    fi
    if [ "$rc" -gt 1 ] || [ "$verdict" != "$expect" ]; then
        bad "$name" "grade$n says $verdict (exit $rc), expected $expect"
    elif ! printf '%s\n' "$shown" | grep -qF -- "$message"; then
        bad "$name" "grade$n says $verdict as expected, but not \"$message\" first"
    elif [ -n "$absent" ] && grep -qF -- "$absent" "$out"; then
        bad "$name" "grade$n says $verdict as expected, but also \"$(grep -F -m1 -- "$absent" "$out" | sed 's/^ *//')\""
    elif [ -n "$within" ] && [ "$secs" -gt "$within" ]; then
        bad "$name" "grade$n took $secs s, more than $within s"
    elif running "$bin"; then
        bad "$name" "processes of $bin are still running after grade$n ended"
        pkill -KILL -f "$bin"
    else
        ok "$name" "$verdict as it must in $secs s: $(printf '%s\n' "$shown" | grep -F -m1 -- "$message" | sed 's/^ *//')"
    fi
done

# Ctrl-C: grade the hung answer with a long limit, interrupt the grader while the job hangs.
bin=$B/planted/step03-hang-rank1
GRADE_TIMEOUT_S=300 "$B/tests/grade/grade_step03" "$bin" >"$out" 2>&1 &
gpid=$!
i=0
while [ $i -lt 100 ] && [ "$(pgrep -fc "$bin")" -lt 2 ]; do sleep 0.1; i=$((i + 1)); done
sleep 2
before=$(pgrep -fc "$bin")
kill -INT "$gpid"
t0=$(date +%s)
wait "$gpid"
rc=$?
secs=$(($(date +%s) - t0))
sleep 0.5
if [ "$before" -lt 2 ]; then
    bad "ctrl-c" "the hung job was not running when the grader was interrupted ($before processes)"
elif [ "$rc" -eq 0 ] || [ "$secs" -gt 5 ]; then
    bad "ctrl-c" "after SIGINT the grader took $secs s and exited $rc"
elif running "$bin"; then
    bad "ctrl-c" "processes of $bin are still running after the interrupted grader ended"
    pkill -KILL -f "$bin"
else
    ok "ctrl-c" "SIGINT to grade03 grading a hung job ($before processes): it stopped in $secs s (exit $rc), nothing left running"
fi
echo "planted answers: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
