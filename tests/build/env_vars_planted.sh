#!/bin/sh
# env_vars_planted.sh — tools/check_env_vars.sh must fail on both drifts: a variable the code
# reads without a row in docs/api.md, and a row no code reads. Each is planted in a copy of the
# tree (common/, tools/, hvdrun, docs/api.md); the real tree must pass.
# Usage: sh tests/build/env_vars_planted.sh   (from anywhere; no build needed)
set -u
cd "$(dirname "$0")/../.." || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check="sh $tmp/t/tools/check_env_vars.sh $tmp/t"
copy() { rm -rf "$tmp/t" && mkdir -p "$tmp/t/docs" && cp -r common tools hvdrun "$tmp/t/" &&
         cp docs/api.md "$tmp/t/docs/"; }
expect() { # what, expected line, command...
    what=$1 want=$2; shift 2
    if "$@" >"$tmp/out" 2>&1; then
        echo "env_vars_planted: FAIL: $what: the check passed"; fails=$((fails + 1))
    elif ! grep -qF "$want" "$tmp/out"; then
        echo "env_vars_planted: FAIL: $what: no line '$want' in:"; cat "$tmp/out"
        fails=$((fails + 1))
    else
        echo "env_vars_planted: $what: fails as it should ($(grep -F "$want" "$tmp/out"))"
    fi
}
sh tools/check_env_vars.sh >"$tmp/out" 2>&1 ||
    { echo "env_vars_planted: FAIL: the tree itself does not pass:"; cat "$tmp/out"
      fails=$((fails + 1)); }

copy
printf '%s\n' 'const char *planted_env(void);' \
    'const char *planted_env(void) { return getenv("HVDLAB_PLANTED"); }' \
    >>"$tmp/t/common/base/env_switch.c"
expect "a variable read without a row" \
    "HVDLAB_PLANTED is read by common/base/env_switch.c but has no row" $check

copy
sed -i 's/^| `HVD_COMPRESSION` /| `HVD_COMPRESSION` |x|\n| `HVD_NOT_READ` /' "$tmp/t/docs/api.md"
expect "a row no code reads" "has a row for HVD_NOT_READ, which no code reads" $check

copy
printf 'echo "$HVDRUN_PLANTED"\n' >>"$tmp/t/hvdrun"
expect "a launcher variable without a row" "HVDRUN_PLANTED is read by hvdrun but has no row" $check

[ $fails -eq 0 ] && echo "env_vars_planted: 3 planted drifts caught, the tree passes"
[ $fails -eq 0 ]
