#!/bin/sh
# check_steps.sh — the exercise/solution relation of the lab, checked so the two trees never drift:
#   steps/stepNN.c minus its marker lines == solutions/step(NN-1).c   (NN = 02..10)
#   every steps/stepNN.c has at least one marker "// TODO: Step N: hint" for its own N,
#   and no marker of another step; solutions/ have no markers.
# A marker is a whole line: optional indentation, then "// TODO: Step N:" and a one-line hint.
# Exit 0 when all hold; otherwise one line per problem and exit 1.
set -u
cd "$(dirname "$0")/.." || exit 2
bad=0
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
problem() { echo "check-steps: $*"; bad=1; }
for n in 01 02 03 04 05 06 07 08 09 10; do
    s=$(expr "$n" + 0)
    ex=steps/step$n.c
    sol=solutions/step$n.c
    [ -f "$ex" ] || { problem "$ex is missing"; continue; }
    [ -f "$sol" ] || { problem "$sol is missing"; continue; }
    mine=$(grep -cE "^[[:space:]]*// TODO: Step $s: .+" "$ex")
    [ "$mine" -ge 1 ] || problem "$ex has no '// TODO: Step $s: <hint>' marker line"
    others=$(grep -E "TODO" "$ex" | grep -vcE "^[[:space:]]*// TODO: Step $s: .+")
    [ "$others" -eq 0 ] || problem "$ex has $others TODO line(s) that are not whole-line Step $s markers"
    grep -q "TODO" "$sol" && problem "$sol still has TODO markers"
    if [ "$n" != 01 ]; then
        prev=solutions/step$(printf %02d $((s - 1))).c
        grep -vE "^[[:space:]]*// TODO: Step $s: " "$ex" > "$tmp"
        if ! cmp -s "$tmp" "$prev"; then
            problem "$ex without its markers differs from $prev:"
            diff -u "$prev" "$tmp" | sed -n '3,12p' | sed 's/^/    /'
        fi
    fi
done
[ "$bad" -eq 0 ] && echo "check-steps: 10 exercises = previous solution + their own TODO markers; solutions have none"
exit $bad
