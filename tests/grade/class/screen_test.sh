#!/bin/sh
# screen_test.sh — tools/grade_screen.sh on a small class made here: ref (the kit's solutions),
# copycat (ref's step 03 with its comments gone and its indentation changed), forger (the forged
# step 01 of forged/step01.c), incl (a step 03 that includes the solution; a step 02 that calls
# the trace writer, fork and execlp), ex (the untouched exercises). Each is compiled with -c as
# the runner does, the objects and dependency lists in GRADE_OBJ_DIR. Every expected flag must
# be printed, and nothing for the exercises.
# Env: MPICC (default mpicc). Ends with "screen: N passed, N failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
kit=$(cd "$here/../../.." && pwd)
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "screen $1: ok"; }
bad() { fail=$((fail + 1)); echo "screen $1: WRONG: $2"; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
s=$t/subs
mkdir -p "$s/ref" "$s/copycat" "$s/forger" "$s/incl/steps" "$s/ex"
cp "$kit"/solutions/step*.c "$s/ref/"
cp "$kit"/steps/step*.c "$s/ex/"
sed 's#/\*.*\*/##; s/^    /\t/' "$kit/solutions/step03.c" >"$s/copycat/step03.c"
cp "$here/forged/step01.c" "$s/forger/"
printf '#include "../solutions/step03.c"\n' >"$s/incl/steps/step03.c"
{
    printf '#include "base/trace.h"\n#include <unistd.h>\n'
    sed 's/^int main(int argc, char \*\*argv)$/static void f(void) { trace_event("x", "y"); if (fork() == 0) execlp("sh", "sh", (char *)0); }\nint main(int argc, char **argv)/' \
        "$kit/solutions/step02.c"
} >"$s/incl/steps/step02.c"
for who in ref copycat forger incl ex; do
    mkdir -p "$t/obj/$who"
    for f in "$s/$who"/step*.c "$s/$who"/steps/step*.c; do
        [ -f "$f" ] || continue
        b=$(basename "$f" .c)
        (cd "$kit" && ${MPICC:-mpicc} -D_GNU_SOURCE -Icommon -std=c11 -MMD -MF "$t/obj/$who/$b.d" \
            -c "$f" -o "$t/obj/$who/$b.o") >"$t/cc" 2>&1 || true
    done
    d=$s/$who
    [ -d "$d/steps" ] && d=$d/steps
    GRADE_OBJ_DIR=$t/obj/$who sh "$kit/tools/grade_screen.sh" "$d" "$who" "$s" "$kit" >"$t/$who.flags"
done

expect() { # who step text
    if grep -qF "$(printf 'step%s\t%s' "$2" "$3")" "$t/$1.flags"; then ok "$1 step $2: $3"
    else bad "$1 step $2" "no flag \"$3\"; it printed: $(tr '\t\n' ' ;' <"$t/$1.flags")"; fi
}
expect ref 01 "same as the reference"
expect ref 10 "same as the reference"
expect ref 03 "same as copycat"
expect copycat 03 "same as the reference"
expect copycat 03 "same as ref"
expect forger 01 "names HVDLAB_TRACE"
expect incl 03 'header outside common/ and the system'"'"'s: "../solutions/step03.c"'
expect incl 03 "compiled with a header outside common/"
expect incl 02 "calls on the deny list: execlp fork trace_event"
if [ -s "$t/ex.flags" ]; then bad "ex" "the untouched exercises were flagged: $(tr '\t\n' ' ;' <"$t/ex.flags")"
else ok "ex: the untouched exercises are not flagged"; fi
if [ "$(grep -c . "$t/ref.flags")" -eq 11 ]; then ok "ref: 11 flags, no other"
else bad "ref" "$(grep -c . "$t/ref.flags") flags: $(tr '\t\n' ' ;' <"$t/ref.flags")"; fi
sh "$kit/tools/grade_screen.sh" "$s/none" x "$s" "$kit" >"$t/out" 2>&1
rc=$?
if [ "$rc" -eq 2 ] && grep -q "none: not a folder" "$t/out"; then ok "bad folder: exit 2, one line"
else bad "bad folder" "exit $rc: $(cat "$t/out")"; fi
echo "screen: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
