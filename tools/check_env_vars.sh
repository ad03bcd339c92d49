#!/bin/sh
# check_env_vars.sh — `make check-env-vars`: docs/api.md's table of environment variables is the
# one list of what the kit reads from the environment, and it must match the code both ways.
#
#   The code's variables:
#     common/**/*.c, *.h, *.cu and tools/*.c: every getenv("NAME"), and every string literal that
#       is a whole HVD_* or HVDLAB_* name (the on/off switch table, env_switch("NAME", …), the
#       settings hvd_init compares, env_count("NAME", …)).
#     hvdrun and tools/*.sh: every $NAME or ${NAME…} of an HVD_, HVDLAB_ or HVDRUN_ name that
#       the script reads.
#   The table's variables: the `NAME`s in the first column of the rows ("| `NAME` |", or
#     "| `A`, `B` |" for a row of several) under the heading "## Environment variables" of
#     docs/api.md, up to the next heading.
#   A variable the code reads without a row fails, and so does a row no code reads.
#
# Usage: sh tools/check_env_vars.sh [ROOT]   (ROOT: the tree to check, default the one this script
# is in). Prints one line per problem, then one summary line; exit 0 when they match.
set -u
root=${1:-$(dirname "$0")/..}
cd "$root" || { echo "check-env-vars: $root: no such directory"; exit 2; }
doc=docs/api.md
[ -r "$doc" ] || { echo "check-env-vars: $doc: cannot read it"; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# "NAME<TAB>file" for every read in the code.
find common -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) >"$tmp/csrc"
ls tools/*.c >>"$tmp/csrc" 2>/dev/null
while read -r f; do
    { grep -oE 'getenv\("[A-Za-z_][A-Za-z0-9_]*"\)' "$f" | sed 's/^getenv("//; s/")$//'
      grep -oE '"(HVD|HVDLAB)_[A-Z0-9_]+"' "$f" | tr -d '"'; } | sed "s|\$|	$f|"
done <"$tmp/csrc" >"$tmp/code"
for f in hvdrun tools/*.sh; do
    [ -f "$f" ] || continue
    grep -oE '\$\{?(HVD|HVDLAB|HVDRUN)_[A-Z0-9_]+' "$f" | sed 's/^\${*//' | sed "s|\$|	$f|"
done >>"$tmp/code"
sort -u -t '	' -k1,1 "$tmp/code" >"$tmp/code1" # one file named per variable
cut -f1 "$tmp/code1" >"$tmp/codenames"

# The table's names.
awk '/^## Environment variables/ { on = 1; next } /^#/ { on = 0 } on' "$doc" |
    awk -F'|' '/^\|/ { print $2 }' | grep -oE '`[A-Za-z_][A-Za-z0-9_]*`' | tr -d '`' |
    sort >"$tmp/rows"
if [ ! -s "$tmp/rows" ]; then
    echo "check-env-vars: $doc: no table under '## Environment variables'"
    exit 1
fi
fails=0
dups=$(uniq -d "$tmp/rows")
for n in $dups; do
    echo "check-env-vars: FAIL: $doc: $n has more than one row"
    fails=$((fails + 1))
done
sort -u "$tmp/rows" >"$tmp/rows1"

while IFS='	' read -r name file; do
    grep -qx "$name" "$tmp/rows1" && continue
    echo "check-env-vars: FAIL: $name is read by $file but has no row in $doc"
    fails=$((fails + 1))
done <"$tmp/code1"
while read -r name; do
    grep -qx "$name" "$tmp/codenames" && continue
    echo "check-env-vars: FAIL: $doc has a row for $name, which no code reads"
    fails=$((fails + 1))
done <"$tmp/rows1"

echo "check-env-vars: $(wc -l <"$tmp/rows1") rows in $doc, $(wc -l <"$tmp/codenames") variables" \
     "read by common/, tools/ and hvdrun; $fails problem(s)"
[ $fails -eq 0 ]
