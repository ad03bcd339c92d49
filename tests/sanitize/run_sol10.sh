#!/bin/sh
# run_sol10.sh — solution 10 for real under ASan, UBSan and LSan (a SANITIZE=1 build), 2 ranks:
# one epoch with checkpoints and every observer on (HVD_TIMELINE, HVDLAB_TRACE, HVD_PROFILE,
# HVD_CHECK_COLLECTIVES=1), then a resume to epoch 2 with fp16 compression. ASan and LSan write
# each rank's report to a file of its own (log_path), so one that mpirun's output would bury is
# still seen; UBSan's reports ignore log_path in gcc's combined runtime and go to stderr, so the
# runs' output is searched for them too.
# Usage: run_sol10.sh PROGRAM (from the repository root). Env: MPIRUN.
# Exit 0 when both runs exit 0 and no sanitizer wrote a report; 1 with the reports' first lines.
set -u
prog=${1:?usage: run_sol10.sh PROGRAM}
mpirun=${MPIRUN:-mpirun --oversubscribe --allow-run-as-root}
work=$(mktemp -d /tmp/hvdlab-asan-sol10-XXXXXX)
trap 'rm -rf "$work"' EXIT
# fast_unwind_on_malloc=0: whole stacks, so that tests/lsan.supp's library frames match.
export ASAN_OPTIONS="fast_unwind_on_malloc=0:detect_leaks=1:log_path=$work/san/asan"
export UBSAN_OPTIONS="print_stacktrace=1"
export LSAN_OPTIONS="suppressions=$(pwd)/tests/lsan.supp:print_suppressions=0"
mkdir -p "$work/san" "$work/trace"
flags="--train-subset 512 --test-subset 256 --model wrn-10-1 --use-checkpointing
       --log-dir $work/logs"
bad=0
run() { # NAME VAR=VALUE... COMMAND...: runs it, its output in NAME.out; a non-zero exit fails
    name=$1
    shift
    env "$@" >"$work/$name.out" 2>&1
    rc=$?
    [ $rc = 0 ] && return
    echo "asan-sol10: $name: exit $rc"
    grep -m 3 'hvdlab: error' "$work/$name.out" | sed 's/^/  /'
    bad=1
}
run first HVD_TIMELINE="$work/timeline.json" HVDLAB_TRACE="$work/trace" HVD_PROFILE=1 \
    HVD_CHECK_COLLECTIVES=1 timeout 120 $mpirun -n 2 "$prog" $flags --epochs 1
run resume HVD_COMPRESSION=fp16 timeout 120 $mpirun -n 2 "$prog" $flags --epochs 2
grep -q '^Epoch 2/2' "$work/resume.out" && ! grep -q '^Epoch 1/' "$work/resume.out" ||
    { echo "asan-sol10: the second run did not resume at epoch 2"; bad=1; }
for f in "$work"/first.out "$work"/resume.out; do
    grep -q 'runtime error:' "$f" || continue
    echo "asan-sol10: UBSan in $(basename "$f" .out):"
    grep -A 3 'runtime error:' "$f" | head -n 8 | sed 's/^/  /'
    bad=1
done
for f in "$work"/san/*; do
    [ -e "$f" ] || continue
    echo "asan-sol10: report from pid ${f##*.}:"
    grep -E 'ERROR: |runtime error|^ *#[0-9]+ .* in |SUMMARY' "$f" | head -n 12 | sed 's/^/  /'
    bad=1
done
[ $bad = 0 ] && echo "asan-sol10: 2 runs of $prog (checkpoints, a resume): no sanitizer report"
exit $bad
