#!/bin/sh
# report_test.sh — the class reports (tools/grade_report.sh) from a fixture class's verdicts:
# five students (a full solution set, the untouched exercises, planted wrong answers, a hostile
# one whose grader message quotes markup and control characters, one with missing steps), read
# back by check_reports.py (CSV, Gradescope JSON, JUnit, HTML) and the JUnit files validated by
# xmllint against junit.xsd, the page rendered by headless Chromium and its grid read from the
# DOM; then a partial class (no gradebook.csv or index.html may be left)
# and bad verdicts (one line naming the file, exit 1).
# Usage: report_test.sh [OUT EXPECTED]   default: the hand-made fixture/ with fixture.expected;
# given OUT (a graded class, verdicts in place), the reports are written there and checked.
# Ends with "class reports: N passed, N failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
kit=$(cd "$here/../../.." && pwd)
PY=/usr/bin/python3
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "class reports $1: ok"; }
bad() { fail=$((fail + 1)); echo "class reports $1: WRONG: $2"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ $# -ge 2 ]; then
    out=$1 expected=$2
else
    out=$tmp/out expected=$here/fixture.expected
    cp -r "$here/fixture" "$out"
fi

if sh "$kit/tools/grade_report.sh" "$out" >"$tmp/log" 2>&1; then ok "written ($(cat "$tmp/log"))"
else bad written "exit $?: $(cat "$tmp/log")"; fi
if $PY "$here/check_reports.py" "$out" "$expected" >"$tmp/check" 2>&1; then ok "read back ($(tail -1 "$tmp/check"))"
else bad "read back" "$(cat "$tmp/check")"; fi
if xmllint --noout --schema "$here/junit.xsd" "$out"/*/junit.xml >"$tmp/xsd" 2>&1; then ok "junit.xml valid against junit.xsd"
else bad "junit.xsd" "$(grep -v validates "$tmp/xsd" | head -5)"; fi

# The page in a real browser: headless Chromium renders it (scripts are off by the page's own
# policy anyway) and dumps the DOM it built; the grid is read back from that DOM.
if ! command -v chromium >/dev/null 2>&1; then
    bad "page in a browser" "chromium is not installed (make test-grade-reports installs it)"
else
    nosandbox=$([ "$(id -u)" = 0 ] && echo --no-sandbox) # Chromium's own sandbox refuses root
    timeout 120 chromium --headless $nosandbox --disable-gpu --user-data-dir="$tmp/chromium" \
        --dump-dom "file://$out/index.html" >"$tmp/dom.html" 2>"$tmp/chromium.err"
    rc=$?
    if [ "$rc" -ne 0 ] || [ ! -s "$tmp/dom.html" ]; then
        bad "page in a browser" "chromium exit $rc: $(tail -3 "$tmp/chromium.err")"
    elif $PY "$here/check_reports.py" "$out" "$expected" --page "$tmp/dom.html" >"$tmp/check" 2>&1; then
        ok "page in a browser (headless Chromium's DOM: $(tail -1 "$tmp/check"))"
    else
        bad "page in a browser" "$(cat "$tmp/check")"
    fi
fi

[ $# -ge 2 ] && { echo "class reports: $pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit; }

# A partial class: one student without verdicts (a run stopped half-way).
mv "$out/dave-missing/verdicts.tsv" "$tmp/dave.tsv"
sh "$kit/tools/grade_report.sh" "$out" >"$tmp/log" 2>&1
rc=$?
if [ "$rc" -eq 3 ] && [ ! -e "$out/gradebook.csv" ] && [ ! -e "$out/index.html" ] \
   && [ -s "$out/gradebook.partial.csv" ] && grep -q "PARTIAL: 1 of 5 students" "$tmp/log"; then
    ok "partial class: exit 3, gradebook.partial.csv only"
else
    bad "partial class" "exit $rc, $(ls "$out" | tr '\n' ' '): $(cat "$tmp/log")"
fi
mv "$tmp/dave.tsv" "$out/dave-missing/verdicts.tsv"
sh "$kit/tools/grade_report.sh" "$out" >/dev/null 2>&1
if [ -s "$out/gradebook.csv" ] && [ ! -e "$out/gradebook.partial.csv" ]; then ok "completed class: gradebook.csv back, partial removed"
else bad "completed class" "$(ls "$out" | tr '\n' ' ')"; fi

# An id a spreadsheet would run as a formula (-A1 is =-A1 to it): written as text.
cp -r "$out/alice-solutions" "$out/-A1"
sh "$kit/tools/grade_report.sh" "$out" >/dev/null 2>&1
if grep -q "^'-A1,100,100," "$out/gradebook.csv"; then ok "id -A1 written as the text '-A1"
else bad "formula id" "$(grep 'A1' "$out/gradebook.csv")"; fi
rm -rf "${out:?}/-A1"

# Bad verdicts: a line with a state the runner never writes.
printf '01\tpassed\t10\t10\t1.0\t0\t\t\n' >>"$out/carol-planted/verdicts.tsv"
sh "$kit/tools/grade_report.sh" "$out" >"$tmp/log" 2>&1
rc=$?
if [ "$rc" -eq 1 ] && [ "$(wc -l <"$tmp/log")" -eq 1 ] && grep -q "carol-planted/verdicts.tsv:12:" "$tmp/log"; then
    ok "bad verdicts: exit 1, $(cat "$tmp/log")"
else
    bad "bad verdicts" "exit $rc: $(cat "$tmp/log")"
fi
sh "$kit/tools/grade_report.sh" "$tmp/none" >"$tmp/log" 2>&1
rc=$?
if [ "$rc" -eq 1 ] && grep -q "none: not a folder" "$tmp/log"; then ok "missing OUT: exit 1, $(cat "$tmp/log")"
else bad "missing OUT" "exit $rc: $(cat "$tmp/log")"; fi
echo "class reports: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
