#!/bin/sh
# study_args.sh — chapter 11's study scripts (tools/scaling.sh, tools/warmup_experiment.sh) with
# bad options: each stops before it runs or writes anything, exit 2, with one line that names the
# option and its value (they used to stop with the shell's '2: parameter not set' or 'divide by
# zero', some runs in, or to run: --ranks 0 was mpirun -n 0, every core). Needs no build.
# Usage: sh tests/bench/study_args.sh (from anywhere). Exit 0 when all hold.
TEST=study_args
cd "$(dirname "$0")/../.." || exit 2
. tests/bench/check.sh

# refused SCRIPT LINE ARGS...: exit 2, exactly LINE on stderr and nothing else, no --out folder
refused() {
    script=$1 line=$2
    shift 2
    rm -rf "$d/o"
    MPIRUN=false BUILD="$d/nobuild" timeout 20 sh "tools/$script.sh" --out "$d/o" "$@" \
        >"$d/out" 2>&1
    rc=$?
    { [ $rc -eq 2 ] && [ "$(cat "$d/out")" = "$line" ] && [ ! -e "$d/o" ]; } ||
        echo "exit $rc (2 due), due the one line: $line" >>"$d/out"
    check "$script $*" $(($(grep -c 'due the one line' "$d/out") != 0))
}
refused scaling "scaling: --batch needs a value (see the head of tools/scaling.sh)" --batch
refused scaling "scaling: --ranks 0: expected a whole number from 1 to 999999" --ranks 1,0
refused scaling "scaling: --ranks x: expected a whole number from 1 to 999999" --ranks x
refused scaling "scaling: --ranks ',': expected rank counts such as 1,2,4" --ranks ,
refused scaling "scaling: --rounds 2x: expected a whole number from 1 to 999999" --rounds 2x
refused scaling "scaling: --steps -1: expected a whole number from 1 to 999999" --steps -1
refused scaling "scaling: --modes wek: expected strong, weak or strong,weak" --modes wek
refused scaling "scaling: --batch 128 does not split over 3 ranks (strong scaling)" --ranks 1,3
w=warmup_experiment
refused $w "$w: --base-lr needs a value (see the head of tools/$w.sh)" --base-lr
refused $w "$w: --ranks 0: expected a whole number >= 1" --ranks 0
refused $w "$w: --epochs four: expected a whole number >= 1" --epochs four
refused $w "$w: --warmup -2: expected a whole number >= 0" --warmup -2
refused $w "$w: --base-lr 0: expected a number > 0 such as 0.01" --base-lr 0
refused $w "$w: --base-lr 1e-2x: expected a number > 0 such as 0.01" --base-lr 1e-2x
# two points: awk's x + 0 read the number before the second as the value, and the run went on
refused $w "$w: --base-lr 1.2.3: expected a number > 0 such as 0.01" --base-lr 1.2.3
refused $w "$w: --base-lr 0.01.: expected a number > 0 such as 0.01" --base-lr 0.01.
finish
