#!/bin/sh
# tools/grade_class.sh — grade a whole class: make grade-class SUBMISSIONS=DIR [OUT=grades]
# [STEPS="01 … 10"] [SEED=n] [JOBS=1].
#
# DIR/<id>/ holds one student's stepNN.c files, directly or under steps/ (id: [A-Za-z0-9._-],
# 1-64 characters). Per student: the regular files step01.c..step10.c of at most 256 KiB are
# copied (everything else is listed in OUT/<id>/ignored.txt), the screen flags them
# (tools/grade_screen.sh), each is compiled and run in the sandbox (tools/sandbox/run.sh: only
# the student's code goes in; compile, mpirun and ranks), the trusted grader (build/tests/grade/
# grade_stepNN) runs outside and judges what the run left; OUT/<id>/verdicts.tsv, meta.tsv and
# stepNN.log are written into OUT/+partial/<id>/ and moved to OUT/<id>/ only when complete.
# At the end tools/grade_report.sh writes the gradebook. A second run skips the students whose
# results are newer than every file of theirs. Limits: 30 s a run, 6 min a student.
# The interface with the screen and the reports: see the comments at verdict_line and meta.
# Exit: 0 when every student has results, 1 when some could not be graded, 2 on bad input.
#
# Test knobs (tests/grade/hostile_test.sh and bench/grade_class_time.sh only): GRADE_NO_SANDBOX=1
# runs without the sandbox (to measure its cost), GRADE_RUN_LIMIT_S / GRADE_STUDENT_LIMIT_S
# change the limits.
set -u
export LC_ALL=C
kit=$(cd "$(dirname "$0")/.." && pwd)
me="$kit/tools/grade_class.sh"
die() { echo "grade-class: $*" >&2; exit 2; }

# ---- one student (run by xargs -P JOBS as: grade_class.sh --one ID; state in the environment)
if [ "${1:-}" = --one ]; then
    id=$2
    . "$kit/tools/grade_class_one.sh"
    exit $?
fi

subs="" out=grades steps="" seed=1 jobs=1
while [ $# -gt 0 ]; do
    case "$1" in
    --submissions) subs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    *) die "unknown argument '$1' (usage: make grade-class SUBMISSIONS=DIR [OUT=grades] [STEPS=\"01 02\"] [SEED=n] [JOBS=n])" ;;
    esac
done
[ -n "$subs" ] || die "SUBMISSIONS is missing (make grade-class SUBMISSIONS=DIR: a folder with one folder per student)"
[ -d "$subs" ] || die "SUBMISSIONS=$subs: not a folder"
[ -r "$subs" ] && [ -x "$subs" ] || die "SUBMISSIONS=$subs: cannot be read"
[ -n "$out" ] || die "OUT is empty"
[ -n "$steps" ] || steps="01 02 03 04 05 06 07 08 09 10"
for s in $steps; do
    case "$s" in 0[1-9] | 10) ;; *) die "STEPS: '$s' is not a step 01..10 (two digits)" ;; esac
done
case "$seed" in '' | *[!0-9]*) die "SEED=$seed: not a non-negative whole number" ;; esac
case "$jobs" in '' | *[!0-9]* | 0) die "JOBS=$jobs: not a positive whole number" ;; esac
[ "$jobs" -le 16 ] || die "JOBS=$jobs: at most 16"
subs=$(cd "$subs" && pwd)
mkdir -p "$out" 2>/dev/null && [ -w "$out" ] || die "OUT=$out: cannot be created or written"
out=$(cd "$out" && pwd)
case "$out/" in "$subs"/*) die "OUT=$out is inside SUBMISSIONS" ;; esac
case "$subs/" in "$out"/*) die "SUBMISSIONS=$subs is inside OUT" ;; esac
case "$out/" in "$kit"/common/* | "$kit"/solutions/* | "$kit"/build/* | "$kit"/tools/* | "$kit"/tests/*)
    die "OUT=$out is inside the kit's own files" ;;
esac

# The students: every folder; a name outside the id pattern stops the run before anything is
# graded (one line). Other entries are listed in OUT/ignored.txt.
ids="" n=0 ignored=""
for p in "$subs"/* "$subs"/.[!.]* "$subs"/..?*; do
    [ -e "$p" ] || [ -L "$p" ] || continue
    name=${p##*/}
    if [ -d "$p" ] && [ ! -L "$p" ]; then
        if ! printf '%s' "$name" | grep -Eq '^[A-Za-z0-9._-]{1,64}$' || [ "$(printf '%s' "$name" | wc -l)" != 0 ]; then
            die "'$(printf '%s' "$name" | tr -c '[:print:]' '?')' in SUBMISSIONS: not a valid student id (1-64 of A-Z a-z 0-9 . _ -)"
        fi
        case "$name" in .*) die "'$name' in SUBMISSIONS: a student id may not start with a dot" ;; esac
        [ -r "$p" ] && [ -x "$p" ] || die "SUBMISSIONS/$name: cannot be read"
        ids="$ids $name"
        n=$((n + 1))
    else
        ignored="$ignored$name
"
    fi
done
[ "$n" -gt 0 ] || die "SUBMISSIONS=$subs holds no student folder"

build=${BUILD:-build}
case "$build" in /*) ;; *) build="$kit/$build" ;; esac
for s in $steps; do
    [ -x "$build/tests/grade/grade_step$s" ] || die "$build/tests/grade/grade_step$s is missing (make grade-class builds it)"
done
[ -f "$build/libhvdlab.a" ] || die "$build/libhvdlab.a is missing (make grade-class builds it)"

# The sandbox: one real start of it, or one line and exit 2.
probe=$(mktemp -d) || die "mktemp failed"
chmod 755 "$probe"
if [ "${GRADE_NO_SANDBOX:-}" = 1 ]; then
    [ "${HVDLAB_SANDBOX_TEST:-}" = 1 ] || die "GRADE_NO_SANDBOX is a test knob (needs HVDLAB_SANDBOX_TEST=1)"
    sandbox=none
    echo "grade-class: TEST KNOB: no sandbox; student code runs as $(id -un)" >&2
else
    sandbox=$("$kit/tools/sandbox/run.sh" --work "$probe" -- sh -c 'echo ok' 2>"$probe.err")
    if [ "$sandbox" != ok ]; then
        msg=$(head -1 "$probe.err"); rm -rf "$probe" "$probe.err"
        die "no sandbox available: ${msg:-the sandbox did not start}"
    fi
    sandbox=${SANDBOX_BACKEND:-}
    if [ -z "$sandbox" ]; then
        if command -v bwrap >/dev/null 2>&1 && bwrap --unshare-all --ro-bind / / true 2>/dev/null; then
            sandbox=bwrap
        else sandbox=unshare; fi
    fi
fi
rm -rf "$probe" "$probe.err"
# Every later start of the sandbox uses this backend without probing again.
[ "$sandbox" != none ] && export SANDBOX_BACKEND="$sandbox"

# Each student's scratch is a size-capped tmpfs of its own, mounted in a private mount namespace
# (root only; the runner re-runs itself there). Not root: plain folders (see the chapter).
if [ "$(id -u)" = 0 ] && [ -z "${GRADE_CLASS_NS:-}" ]; then
    GRADE_CLASS_NS=1 exec unshare --mount --propagation private sh "$me" --submissions "$subs" \
        --out "$out" --steps "$steps" --seed "$seed" --jobs "$jobs"
fi

scr=$(mktemp -d "${TMPDIR:-/tmp}/hvdlab-class.XXXXXX") || die "mktemp failed"
chmod 711 "$scr"
trap 'for m in "$scr"/s/*; do umount "$m" 2>/dev/null; done; rm -rf "$scr"' EXIT
mkdir -p "$scr/src" "$scr/s" "$out/+partial"
chmod 700 "$scr/src" "$out/+partial"
printf '%s' "$ignored" | sed 's/$/\tnot a student folder/' | sed '/^\t/d' >"$out/ignored.txt"
commit=$(git -C "$kit" rev-parse HEAD 2>/dev/null || echo unknown)
# The headers and library the students compile against, where their uid can read them.
if [ "$sandbox" != none ]; then
    sh "$kit/tools/sandbox/stage_kit.sh" "$kit" "$build/libhvdlab.a" "$scr/kit" || die "staging the kit for the sandbox failed"
fi

# Collect every student's files first (the screen compares each with all the others).
for id in $ids; do
    sh "$kit/tools/grade_collect.sh" "$subs/$id" "$scr/src/$id" || die "collecting $id failed"
done

# The graded sizes (from SEED) and, per step, a reference run of the kit's solution with them,
# outside the sandbox: the students' traces are compared with its digests (flags only). Skipped
# when every student's results are kept (a resumed run with nothing left to grade).
sizes_file="" ref_dir=""
todo=0
for id in $ids; do
    if [ -f "$out/$id/verdicts.tsv" ] && [ -f "$out/$id/meta.tsv" ] &&
       [ -z "$(find "$subs/$id" -newer "$out/$id/verdicts.tsv" -print 2>/dev/null | head -1)" ]; then
        continue
    fi
    todo=$((todo + 1))
done
if [ -f "$kit/tools/grade_sizes.sh" ]; then
    sizes_file="$scr/sizes.txt"
    sh "$kit/tools/grade_sizes.sh" "$seed" >"$sizes_file" 2>"$scr/sizes.err" ||
        die "tools/grade_sizes.sh $seed failed: $(head -1 "$scr/sizes.err")"
    if [ "$todo" -gt 0 ] && [ "${GRADE_NO_REFERENCE:-}" != 1 ]; then
        ref_dir="$scr/ref"
        mkdir -p "$ref_dir"
        mpirun_ref="mpirun --oversubscribe"
        [ "$(id -u)" = 0 ] && mpirun_ref="$mpirun_ref --allow-run-as-root"
        for s in $steps; do
            [ -x "$build/solutions/step$s" ] || die "$build/solutions/step$s is missing (make grade-class builds it)"
            printf 'grade-class: reference run of solution %s (seed %s) ...' "$s" "$seed"
            a=$(date +%s)
            if ! MPIRUN="$mpirun_ref" GRADE_SIZES_FILE="$sizes_file" GRADE_WORK_DIR="$ref_dir/step$s" \
                 timeout -k 5 300 "$build/tests/grade/grade_step$s" "$build/solutions/step$s" \
                 >"$scr/ref$s.log" 2>&1; then
                echo
                die "the kit's solution $s fails its grader with SEED=$seed's sizes, so the class cannot be graded with them: $(grep -m1 'FAIL' "$scr/ref$s.log")"
            fi
            echo " $(($(date +%s) - a)) s"
        done
    fi
fi

export GC_KIT="$kit" GC_SUBS="$subs" GC_OUT="$out" GC_STEPS="$steps" GC_SEED="$seed" \
       GC_SCR="$scr" GC_BUILD="$build" GC_SANDBOX="$sandbox" GC_COMMIT="$commit" GC_N="$n" \
       GC_JOBS="$jobs" GC_SIZES="$sizes_file" GC_REF="$ref_dir"
: >"$scr/done.txt"
echo "grade-class: $n students, steps $(echo $steps | tr ' ' ','), seed $seed, $jobs at once, sandbox $sandbox, kit $commit"
t0=$(date +%s)
printf '%s\n' $ids >"$scr/ids.txt"
# The students' graders run in a process group of their own (setsid): stopped (Ctrl-C, kill), the
# runner stops all of it, and what was not finished stays in OUT/+partial/, not in OUT/<id>/.
setsid xargs -P "$jobs" -I{} sh "$me" --one {} <"$scr/ids.txt" &
xpid=$!
own_pg=$(ps -o pgid= -p $$ | tr -d ' ') xpg=$own_pg k=0
while [ "$xpg" = "$own_pg" ] && [ $k -lt 50 ]; do # until setsid has made its group
    xpg=$(ps -o pgid= -p "$xpid" | tr -d ' '); [ "$xpg" = "$own_pg" ] && sleep 0.02; k=$((k + 1))
done
[ "$xpg" = "$own_pg" ] && xpg="" # never the runner's own group
trap '[ -n "$xpg" ] && kill -TERM -"$xpg" 2>/dev/null; wait; echo "grade-class: stopped; the students not finished have no results (run it again to finish)" >&2; exit 130' INT TERM HUP
wait $xpid
trap - INT TERM HUP
rc=0
missing=0
for id in $ids; do [ -f "$out/$id/verdicts.tsv" ] || missing=$((missing + 1)); done
rmdir "$out/+partial" 2>/dev/null
echo "grade-class: $((n - missing)) of $n students graded in $(($(date +%s) - t0)) s"
[ "$missing" = 0 ] || { echo "grade-class: $missing students have no results: run it again to finish them" >&2; rc=1; }
if [ -f "$kit/tools/grade_report.sh" ]; then
    sh "$kit/tools/grade_report.sh" "$out" || rc=1
fi
exit $rc
