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
while [ $# -gt 0 ]; do
    case $1 in
    --out) out=$2; shift ;;
    --ranks) ranks=$2; shift ;;
    --base-lr) lr=$2; shift ;;
    --batch) batch=$2; shift ;;
    --epochs) epochs=$2; shift ;;
    --warmup) warmup=$2; shift ;;
    --train) train=$2; shift ;;
    --test) test=$2; shift ;;
    *) echo "warmup_experiment: unknown option $1 (see the head of $0)" >&2; exit 2 ;;
    esac
    shift
done
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
