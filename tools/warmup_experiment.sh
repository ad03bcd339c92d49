#!/bin/sh
# warmup_experiment.sh — chapter 11's large-batch warmup experiment (make warmup-experiment), the
# kit's version of the ALCF demonstration: the same run twice, with --warmup-epochs 0 and with a
# warmup, on 8 ranks (oversubscribed on a small machine) whose LR is scaled to
# base_lr x 8. The defaults are the configuration chapter 11 found: --base-lr 0.01 (lr 0.08),
# batch 32 per rank (global 256), 8,000 training and 1,000 test images, 4 epochs, warmup 2
# epochs. A run that diverges stops on the kit's NaN/Inf check: that is an outcome, not a
# failure of this script, which fails only when a run ends in another error.
# Writes OUT/no-warmup.txt and OUT/warmup.txt (each run's output), OUT/config.txt (one line: the
# configuration), and prints one line per run: how it ended.
# Usage: tools/warmup_experiment.sh [--out results/warmup] [--ranks 8] [--base-lr 0.01]
#        [--batch 32] [--epochs 4] [--warmup 2] [--train 8000] [--test 1000]
# Env: MPIRUN (mpirun with its flags).
set -eu
cd "$(dirname "$0")/.."
out=results/warmup ranks=8 lr=0.01 batch=32 epochs=4 warmup=2 train=8000 test=1000
# Options are checked before anything runs or is written: a missing value stopped with the
# shell's '2: parameter not set', and --ranks 0 or x went to mpirun (-n 0: every core) under a
# configuration line that said '0 ranks (lr 0)'.
need() { [ $# -ge 2 ] || { echo "warmup_experiment: $1 needs a value (see the head of $0)" >&2
                           exit 2; }; }
num() { # OPTION VALUE MIN: VALUE without leading zeros, or one line and status 2
    case $2 in
    '' | *[!0-9]*) ;;
    *) v=$(echo "$2" | sed 's/^0*//')
       v=${v:-0}
       [ ${#v} -le 9 ] && [ "$v" -ge "$3" ] && { echo "$v"; return 0; } ;;
    esac
    echo "warmup_experiment: $1 $2: expected a whole number >= $3" >&2
    return 2
}
while [ $# -gt 0 ]; do
    case $1 in
    --out) need "$@"; out=$2; shift ;;
    --ranks) need "$@"; ranks=$2; shift ;;
    --base-lr) need "$@"; lr=$2; shift ;;
    --batch) need "$@"; batch=$2; shift ;;
    --epochs) need "$@"; epochs=$2; shift ;;
    --warmup) need "$@"; warmup=$2; shift ;;
    --train) need "$@"; train=$2; shift ;;
    --test) need "$@"; test=$2; shift ;;
    *) echo "warmup_experiment: unknown option $1 (see the head of $0)" >&2; exit 2 ;;
    esac
    shift
done
ranks=$(num --ranks "$ranks" 1) || exit 2
batch=$(num --batch "$batch" 1) || exit 2
epochs=$(num --epochs "$epochs" 1) || exit 2
warmup=$(num --warmup "$warmup" 0) || exit 2
train=$(num --train "$train" 0) || exit 2
test=$(num --test "$test" 0) || exit 2
# One point at most: awk's x + 0 reads 1.2.3 as 1.2, which passed, and the run failed later.
awk -v x="$lr" 'BEGIN { exit !(x ~ /^([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$/ &&
                               x + 0 > 0) }' ||
    { echo "warmup_experiment: --base-lr $lr: expected a number > 0 such as 0.01" >&2; exit 2; }
[ -x ./solution10 ] || { echo "warmup_experiment: ./solution10 is missing (make solution10)" >&2; exit 1; }
MPIRUN=${MPIRUN:-mpirun --oversubscribe $( [ "$(id -u)" = 0 ] && echo --allow-run-as-root )}
mkdir -p "$out"
echo "$ranks ranks, --base-lr $lr (lr $(awk -v a="$lr" -v n="$ranks" 'BEGIN { print a * n }')), batch $batch per rank, $train images, $epochs epochs" > "$out/config.txt"
for w in 0 "$warmup"; do
    log=$out/warmup.txt
    [ "$w" = 0 ] && log=$out/no-warmup.txt
    echo "warmup_experiment: $(cat "$out/config.txt"), --warmup-epochs $w -> $log" >&2
    # One thread per rank: 8 ranks share the cores.
    # shellcheck disable=SC2086
    OMP_NUM_THREADS=1 $MPIRUN -x OMP_NUM_THREADS -n "$ranks" ./solution10 --epochs "$epochs" \
        --batch-size "$batch" --train-subset "$train" --test-subset "$test" --base-lr "$lr" \
        --warmup-epochs "$w" --target-accuracy 1 > "$log" 2>&1 || true
    if grep -aq '^Test accuracy' "$log"; then
        echo "warmup_experiment: --warmup-epochs $w: learned: $(grep -a 'val_accuracy' "$log" | tail -1 | sed 's/.*- loss/loss/'), $(grep -a '^Test accuracy' "$log")"
    elif grep -aq 'training diverged' "$log"; then
        echo "warmup_experiment: --warmup-epochs $w: diverged: $(grep -a -m1 'training diverged' "$log" | sed 's/.*training diverged \(at [^:]*\):.*\(learning rate [0-9.e+-]*\).*/\1, \2/')"
    else
        echo "warmup_experiment: --warmup-epochs $w: ended in an error; see $log" >&2
        tail -3 "$log" >&2
        exit 1
    fi
done
