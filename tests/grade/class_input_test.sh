#!/bin/sh
# tests/grade/class_input_test.sh — make grade-class's bad input and interruption (part of make
# test-grade-class): each bad input gets one line on stderr and exit 2 before anything is graded;
# a run stopped half-way leaves no student's results looking complete and no gradebook, and no
# process of the sandbox's uids. Root (runs some cases as an unprivileged uid). BUILD: build dir.
set -u
kit=$(cd "$(dirname "$0")/../.." && pwd)
cd "$kit" || exit 2
if [ "$(id -u)" != 0 ]; then echo "class_input_test: skipped (needs root)"; exit 0; fi
T=$(mktemp -d /tmp/hvdlab-class-input.XXXXXX)
chmod 755 "$T"
trap 'rm -rf "$T"' EXIT
nfail=0 nok=0
ok() { nok=$((nok + 1)); echo "  ok   $*"; }
bad() { nfail=$((nfail + 1)); echo "  FAIL $*"; }
# one_line DESC EXPECTED-TEXT COMMAND...: exit 2, exactly one line on stderr holding the text,
# and no OUT/gradebook.csv.
one_line() {
    desc=$1 want=$2; shift 2
    "$@" >"$T/out.txt" 2>"$T/err.txt"
    rc=$? lines=$(wc -l <"$T/err.txt")
    if [ $rc = 2 ] && [ "$lines" = 1 ] && grep -q "$want" "$T/err.txt" && [ ! -e "$T/OUT/gradebook.csv" ]; then
        ok "$desc: $(cat "$T/err.txt")"
    else
        bad "$desc: exit $rc, $lines lines: $(head -3 "$T/err.txt")"
    fi
}
gc() { BUILD=${BUILD:-build} sh tools/grade_class.sh --out "$T/OUT" "$@"; }
mkdir -p "$T/subs/alice" "$T/file"
cp solutions/step01.c "$T/subs/alice/"
one_line "no SUBMISSIONS" "SUBMISSIONS is missing" gc
one_line "SUBMISSIONS not a folder" "not a folder" gc --submissions "$T/nowhere"
mkdir -p "$T/bad/bad id!" && one_line "a bad id" "not a valid student id" gc --submissions "$T/bad"
rm -rf "$T/bad" && mkdir -p "$T/bad/$(printf 'x%.0s' $(seq 65))"
one_line "an id of 65 characters" "not a valid student id" gc --submissions "$T/bad"
one_line "STEPS=11" "STEPS: '11'" gc --submissions "$T/subs" --steps 11
one_line "JOBS=0" "JOBS=0" gc --submissions "$T/subs" --jobs 0
one_line "SEED=x" "SEED=x" gc --submissions "$T/subs" --seed x
one_line "OUT inside SUBMISSIONS" "inside SUBMISSIONS" sh tools/grade_class.sh --submissions "$T/subs" --out "$T/subs/o"
# As an unprivileged user: an unreadable folder; and a bwrap that cannot make namespaces (a
# kernel without unprivileged user namespaces) with no root for the fallback.
chmod 700 "$T/subs"; chown -R 61096 "$T/OUT" 2>/dev/null
as_user() { setpriv --reuid=61096 --regid=61096 --clear-groups env HOME="$T" "$@"; }
mkdir -p "$T/OUT" && chown 61096 "$T/OUT"
# That user must reach the kit to run it at all: a clone inside a closed folder (mode 0700, as
# under /root) is not a kit that user could grade with, so the two cases are skipped there.
if as_user test -r "$(pwd)/tools/grade_class.sh"; then
    one_line "an unreadable folder" "cannot be read" as_user sh tools/grade_class.sh --submissions "$T/subs" --out "$T/OUT"
    chmod 755 "$T/subs"
    mkdir -p "$T/fakebin" && printf '#!/bin/sh\necho "bwrap: No permissions to create new namespace" >&2\nexit 1\n' >"$T/fakebin/bwrap"
    chmod 755 "$T/fakebin/bwrap"
    one_line "no sandbox available" "no sandbox available" as_user env PATH="$T/fakebin:/usr/bin:/bin" \
        sh tools/grade_class.sh --submissions "$T/subs" --out "$T/OUT"
else
    chmod 755 "$T/subs"
    echo "  skip an unreadable folder, no sandbox available: uid 61096 cannot read the kit at $(pwd)"
fi

# Stopped half-way (SIGTERM while the student is graded): nothing looks complete.
rm -rf "$T/OUT"
cp solutions/step02.c solutions/step03.c "$T/subs/alice/"
GRADE_LDLIBS="$(pkg-config --libs openblas zlib) $( [ -f /usr/include/oneapi/dnnl/dnnl.h ] && echo -ldnnl) -lm" \
    BUILD=${BUILD:-build} sh tools/grade_class.sh --submissions "$T/subs" --out "$T/OUT" --steps "01 02 03" \
    >"$T/run.log" 2>&1 &
pid=$!
k=0
while [ ! -f "$T/OUT/+partial/alice/step01.log" ] && [ $k -lt 600 ]; do sleep 0.1; k=$((k + 1)); done
sleep 2
kill -TERM $pid
k=0
while kill -0 $pid 2>/dev/null && [ $k -lt 150 ]; do sleep 0.1; k=$((k + 1)); done
wait $pid
rc=$?
[ $rc = 130 ] && ok "stopped: exit 130" || bad "stopped: exit $rc (not 130): $(tail -2 "$T/run.log")"
[ ! -e "$T/OUT/alice/verdicts.tsv" ] && [ ! -e "$T/OUT/gradebook.csv" ] && ok "stopped: no results, no gradebook" ||
    bad "stopped: $(ls "$T/OUT" "$T/OUT/alice" 2>&1 | tr '\n' ' ')"
# The uid this run's student had (other classes on the machine may use others meanwhile).
suid=$(cat "$T/OUT/+partial/alice/sandbox_uid" 2>/dev/null || echo 61000)
k=0
while [ "$(ps -eo uid= | awk -v u="$suid" '$1 == u' | wc -l)" != 0 ] && [ $k -lt 50 ]; do sleep 0.1; k=$((k + 1)); done
left=$(ps -eo uid=,pid=,args= | awk -v u="$suid" '$1 == u')
[ -z "$left" ] && ok "stopped: no process of its sandbox uid ($suid) left" || bad "stopped: left: $left"
left=$(ps -eo pid=,args= | grep "$T/" | grep -v grep)
[ -z "$left" ] && ok "stopped: no grader or runner left" || bad "stopped: left: $left"
echo "class_input_test: $nok passed, $nfail failed"
[ "$nfail" = 0 ]
