# shellcheck shell=sh
# check.sh — the scratch folder and verdict helpers of the tests/bench/*.sh scripts, sourced after
# they set TEST (the script's name for its lines). It makes d, a scratch folder removed at exit,
# whose file out holds the output of the run being checked.
#   check NAME STATUS   STATUS 0: "TEST: NAME: ok"; else "TEST: NAME: FAILED" and d/out, indented
#   finish              "TEST: all checks passed" or "TEST: N check(s) failed"; its status says which
d=$(mktemp -d) || exit 1
trap 'rm -rf "$d"' EXIT
fails=0
check() {
    if [ "$2" -eq 0 ]; then
        echo "$TEST: $1: ok"
    else
        echo "$TEST: $1: FAILED"
        sed 's/^/  /' "$d/out"
        fails=$((fails + 1))
    fi
}
finish() {
    if [ "$fails" -eq 0 ]; then
        echo "$TEST: all checks passed"
    else
        echo "$TEST: $fails check(s) failed"
    fi
    [ "$fails" -eq 0 ]
}
