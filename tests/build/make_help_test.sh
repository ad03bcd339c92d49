#!/bin/sh
# make_help_test.sh — `make help` (tools/make_help.sh) lists every target that has a "## "
# comment in the Makefile or mk/*.mk exactly once, under one of its group titles, the student's
# group first. Prints one line per problem, then one summary line; exit 0 when all hold.
# Usage: sh tests/build/make_help_test.sh   (from anywhere; no build needed)
set -u
cd "$(dirname "$0")/../.." || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sh tools/make_help.sh Makefile mk/*.mk >"$tmp/help" ||
    { echo "make_help_test: FAIL: make_help.sh exited $?"; exit 1; }
grep -hE '^[a-zA-Z0-9_%-]+:.*## ' Makefile mk/*.mk | sed 's/:.*//' | sort -u >"$tmp/targets"
fails=0
while read -r t; do
    n=$(grep -c "^  $t  *" "$tmp/help")
    [ "$n" = 1 ] && continue
    echo "make_help_test: FAIL: target $t is listed $n times"
    fails=$((fails + 1))
done <"$tmp/targets"
first=$(head -1 "$tmp/help")
case $first in
Student*) ;;
*) echo "make_help_test: FAIL: the first group is not the student's: $first"; fails=$((fails + 1)) ;;
esac
echo "make_help_test: $(wc -l <"$tmp/targets") targets, $(grep -c ':$' "$tmp/help") groups; $fails problem(s)"
[ $fails -eq 0 ]
