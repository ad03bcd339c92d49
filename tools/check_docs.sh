#!/bin/sh
# check_docs.sh — `make check-docs`: every command and every quoted line of code in the lab text
# (notebooks-md/*.md), the reference pages (docs/*.md), README.md and DEVELOPERS.md must still work
# against this tree.
#
#   ```sh blocks, one command per line (`a && b` and `a; b` are split, `\` continues a line,
#   leading VAR=value assignments are skipped):
#     make T...         `make -n T` must succeed. Targets whose recipe calls $(MAKE) (make runs
#                       those lines even under -n) are only looked up in make's database.
#     [launcher ...] ./stepNN|./solutionNN FLAGS   (launcher: ./hvdrun, mpirun, srun, or none)
#                       the built program must accept FLAGS: it is run as `PROG FLAGS --help`
#                       and must exit 0. The parser reads every flag before it acts on --help
#                       (it stops at --help itself), so a bad flag or value exits non-zero.
#     anything else     (rm, ls, grep, salloc …) is counted as not checked; -v lists them.
#   ```c blocks in chapter NN: every non-blank line must still be a line of steps/stepNN.c or
#     solutions/stepNN.c (leading and trailing blanks ignored), so quoted code cannot drift.
#   Links to local files (](x.md), ](images/y.svg)), relative to the file, must exist; no @@…@@
#     placeholder may be left.
#   docs/api.md: every on/off switch of common/base/env_switch.c's table has its row in the table
#     of variables saying its default, and is in the list of switches under it.
#
# Usage: sh tools/check_docs.sh [-v]   (from anywhere; needs the lab built: make lab)
# Env: BUILD (default build), MAKE (default make), DOCS (the files, default notebooks-md/*.md
# docs/*.md README.md DEVELOPERS.md; the quoted-code check reads the chapters NN-*.md among
# them). Exit 0 when everything passes.
set -u
cd "$(dirname "$0")/.." || exit 2
BUILD=${BUILD:-build}
MAKE=${MAKE:-make}
verbose=0
[ "${1:-}" = "-v" ] && verbose=1
docs=${DOCS:-$(echo notebooks-md/*.md docs/*.md README.md DEVELOPERS.md)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { fails=$((fails + 1)); echo "check-docs: FAIL: $*"; }
say() { [ $verbose = 1 ] && echo "check-docs: $*"; return 0; }

# 1. Commands of ```sh blocks: "file:line<TAB>command", one per command.
for f in $docs; do
    awk -v F="$f" '
        /^```/ { if (insh) { insh = 0; next } if ($0 ~ /^```sh[ \t]*$/) { insh = 1; start = 0 } next }
        !insh { next }
        {
            line = $0
            if (cont != "") { line = cont " " line; ln = cln } else ln = NR
            if (line ~ /\\$/) { sub(/\\$/, "", line); cont = line; cln = ln; next }
            cont = ""
            sub(/^[ \t]+/, "", line)
            if (line ~ /^#/ || line ~ /^$/) next
            sub(/[ \t]+#.*$/, "", line)            # trailing comment
            n = split(line, parts, /[ \t]*(&&|;)[ \t]*/)
            for (i = 1; i <= n; i++) if (parts[i] != "") printf "%s:%d\t%s\n", F, ln, parts[i]
        }' "$f"
done >"$tmp/cmds"

# The make database, read without running anything: the targets whose recipe uses $(MAKE).
$MAKE -npq .DEFAULT 2>/dev/null | awk '
    /^[^#\t.=][^=]*:([^=]|$)/ { t = $0; sub(/:.*/, "", t); print "T " t; cur = t; next }
    /^\t/ && cur != "" && ($0 ~ /MAKE\)/ || $0 ~ /MAKE\}/) { print "R " cur; next }
    /^$/ { cur = "" }' | sort -u >"$tmp/db"

nmake=0 nprog=0 nother=0
: >"$tmp/maketargets"
: >"$tmp/progs"
tab=$(printf '\t')
while IFS="$tab" read -r where cmd; do
    # skip leading VAR=value words
    set -f
    set -- $cmd
    set +f
    while [ $# -gt 0 ] && case $1 in [A-Za-z_]*=*) true ;; *) false ;; esac; do shift; done
    [ $# -eq 0 ] && continue
    if [ "$1" = make ]; then
        shift
        nmake=$((nmake + 1))
        targets=
        for w in "$@"; do
            case $w in
            -*|*=*) ;;
            *) targets="$targets $w" ;;
            esac
        done
        [ -z "$targets" ] && targets=all
        for t in $targets; do
            if grep -qx "R $t" "$tmp/db"; then
                say "$where: make $t (target exists; its recipe runs make, so not run with -n)"
            else
                echo "$where $t" >>"$tmp/maketargets"
            fi
        done
        continue
    fi
    # a lab program, possibly behind a launcher
    launcher=
    case $1 in
    ./hvdrun|mpirun|srun) launcher=$1 ;;
    esac
    prog=
    for w in "$@"; do
        shift
        case $w in
        ./step[0-9][0-9]|./solution[0-9][0-9]) prog=$w; break ;;
        esac
    done
    if [ -z "$prog" ]; then
        nother=$((nother + 1))
        say "$where: not checked: $cmd"
        continue
    fi
    if [ "$launcher" = ./hvdrun ] && [ ! -x ./hvdrun ]; then
        fail "$where: ./hvdrun is missing or not executable"
    fi
    nn=${prog#./step}
    nn=${nn#./solution}
    case $prog in
    ./step*) bin=$BUILD/steps/step$nn ;;
    *) bin=$BUILD/solutions/step$nn ;;
    esac
    nprog=$((nprog + 1))
    if [ ! -x "$bin" ]; then
        fail "$where: $prog: $bin is not built (make lab)"
        continue
    fi
    # its flags: the words up to a pipe or a redirection
    flags=
    for w in "$@"; do
        case $w in
        '|'*|'>'*|'<'*|[0-9]'>'*) break ;;
        esac
        flags="$flags $w"
    done
    # one line per program + flags: "where<TAB>bin<TAB>flags"
    printf '%s\t%s\t%s\n' "$where" "$bin" "${flags# }" >>"$tmp/progs"
done <"$tmp/cmds"

# make -n: all targets in one go; on failure, one by one to name the culprit.
if [ -s "$tmp/maketargets" ]; then
    all=$(cut -d' ' -f2 "$tmp/maketargets" | sort -u | tr '\n' ' ')
    if ! $MAKE -n --no-print-directory $all >"$tmp/maken" 2>&1; then
        sort -u -k2 "$tmp/maketargets" | while read -r where t; do
            $MAKE -n --no-print-directory "$t" >"$tmp/maken1" 2>&1 ||
                echo "$where: make -n $t failed: $(tail -1 "$tmp/maken1")"
        done >"$tmp/makefail"
        while read -r l; do fail "$l"; done <"$tmp/makefail"
    fi
fi

# Programs: PROG FLAGS --help must exit 0 (distinct command lines only). One at a time: each is
# an MPI singleton, and singletons started together can collide in Open MPI's shared-memory setup
# (seen once, 2026-11-26: "Error: File exists" from a --help run four at a time); ~0.4 s each.
# Each singleton's orted also builds a session tree under the temp dir (Open MPI 4:
# $TMPDIR/ompi.<host>.<uid>/pid.<pid>, jf.<job>); under /tmp that tree is shared with every other
# MPI job the same user runs on the machine, and with what killed jobs left there (Open MPI 4.0
# has a known race between small jobs started together there: open-mpi/ompi#8510, "A call to
# mkdir was unable to create the desired directory"). The runs get a tree of their own in $tmp,
# removed at the end. A failure prints the run's first lines, so that a one-off can be read.
sort -t "$tab" -k2,3 -u "$tmp/progs" >"$tmp/progs.u"
nuniq=$(wc -l <"$tmp/progs.u")
mkdir "$tmp/mpi"
set -f # the flags are split into words, never globbed
while IFS="$tab" read -r where bin flags; do
    # shellcheck disable=SC2086
    TMPDIR=$tmp/mpi OMPI_MCA_orte_tmpdir_base=$tmp/mpi "$bin" $flags --help >"$tmp/out" 2>&1 \
        </dev/null && continue
    rc=$?
    fail "$where: $bin $flags --help exited $rc; its output began:"
    grep -v -e '^[[:space:]]*$' -e '^---*$' "$tmp/out" | head -6 | sed 's/^/check-docs:   /'
done <"$tmp/progs.u"
set +f

# Quoted code: ```c lines of chapter NN must be lines of steps/stepNN.c or solutions/stepNN.c.
ncode=0
for f in $docs; do
    case $(basename "$f") in [0-9][0-9]-*.md) ;; *) continue ;; esac
    nn=$(basename "$f" | cut -c1-2)
    [ "$nn" = 00 ] && continue
    [ -e "steps/step$nn.c" ] || continue # a chapter past the ten steps quotes no step's code
    src="steps/step$nn.c solutions/step$nn.c"
    sed 's/^[ \t]*//; s/[ \t]*$//' $src | sort -u >"$tmp/src"
    awk '/^```/ { if (inc) { inc = 0; next } if ($0 ~ /^```c[ \t]*$/) inc = 1; next }
         inc { l = $0; sub(/^[ \t]+/, "", l); sub(/[ \t]+$/, "", l); if (l != "") printf "%d\t%s\n", NR, l }' \
        "$f" >"$tmp/code"
    while IFS="$tab" read -r ln code; do
        ncode=$((ncode + 1))
        grep -qxF -- "$code" "$tmp/src" || fail "$f:$ln: quoted code is not in $src: $code"
    done <"$tmp/code"
done

# Local links and leftover placeholders.
nlinks=0
for f in $docs; do
    for target in $(grep -o '](\([^)#:]*\)[)#]' "$f" | sed 's/^](//; s/[)#]$//'); do
        nlinks=$((nlinks + 1))
        [ -e "$(dirname "$f")/$target" ] || fail "$f: link to $target, which does not exist"
    done
    if grep -n '@@[A-Z]*:' "$f" >"$tmp/ph"; then
        while read -r l; do fail "$f:${l%%:*}: placeholder left: ${l#*:}"; done <"$tmp/ph"
    fi
done

# The kit's on/off switches: each one of base/env_switch.c's table has its row in docs/api.md's
# table of variables with the table's default ("`1` (default)") and is named in the paragraph
# under it, so the docs cannot drift from the one place that sets a default.
nswitch=0
sed -n 's/^ *\[SWITCH_[A-Z0-9_]*\] = {"\(HVDLAB_[A-Z0-9_]*\)", \([01]\)},$/\1 \2/p' \
    common/base/env_switch.c >"$tmp/switches"
[ -s "$tmp/switches" ] || fail "common/base/env_switch.c: no switch table found"
api=docs/api.md
tr '\n' ' ' <$api | sed 's/  */ /g' >"$tmp/api1"
while read -r name dflt; do
    nswitch=$((nswitch + 1))
    row=$(grep -m1 "^| \`$name\` *|" $api)
    if [ -z "$row" ]; then
        fail "$api: no row for the switch $name in the table of variables"
    elif ! printf '%s\n' "$row" | grep -q "\`$dflt\` (default)"; then
        fail "$api: the row of $name does not say \`$dflt\` (default)" \
             "(common/base/env_switch.c)"
    fi
    grep -q "The kit's on/off switches ([^)]*\`$name\`" "$tmp/api1" ||
        fail "$api: $name is missing from the list of the kit's on/off switches"
done <"$tmp/switches"

echo "check-docs: $nmake make commands ($(sort -u -k2 "$tmp/maketargets" | wc -l) targets run with make -n)," \
     "$nprog program command lines ($nuniq distinct, run with --help), $ncode quoted code lines," \
     "$nlinks local links, $nswitch switches' defaults checked;" \
     "$nother other commands not checked (-v lists them)"
if [ $fails -gt 0 ]; then
    echo "check-docs: $fails problem(s)"
    exit 1
fi
echo "check-docs: all pass"
