#!/bin/sh
# grade_all.sh — `make grade`: builds and grades each of the student's ten steps and prints a
# table. Env: MAKE, MPIRUN (with flags), BUILD (default build).
set -u
cd "$(dirname "$0")/.." || exit 2
BUILD=${BUILD:-build}
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
npass=0
printf "%-7s %-6s %s\n" step result "first problem"
for n in 01 02 03 04 05 06 07 08 09 10; do
    if ! ${MAKE:-make} --no-print-directory -s step$n >"$log/build$n" 2>&1; then
        printf "%-7s %-6s %s\n" "$n" FAIL "does not compile: $(grep -m1 'error' "$log/build$n")"
        continue
    fi
    if "$BUILD/tests/grade/grade_step$n" ./step$n >"$log/grade$n" 2>&1; then
        npass=$((npass + 1))
        printf "%-7s %-6s\n" "$n" PASS
    else
        first=$(grep -m1 -A1 '\[FAIL\]' "$log/grade$n" | tail -1 | sed 's/^ *//')
        printf "%-7s %-6s %s\n" "$n" FAIL "$(grep -m1 '\[FAIL\]' "$log/grade$n" | sed 's/^ *\[FAIL\] //'): $first"
    fi
done
echo "grade: $npass of 10 steps pass (details: make gradeNN)"
