#!/bin/sh
# scaling_training.sh — the training runs chapter 11 plots (make scaling-training): solution 9
# (step 9's warmup and schedule) for 3 epochs on the default subsets (12,000 training, 2,000
# test images) on 1 rank and on 2 ranks, with --warmup-epochs 2 as in chapter 9, so the 2-rank
# run's learning rate climbs from 0.01 to 0.02 over 2 epochs (on 1 rank it is 0.01 throughout).
# Writes OUT/ranks1.txt and OUT/ranks2.txt (each run's stdout and stderr) and OUT/trace-ranks2/
# (HVDLAB_TRACE of the 2-rank run: its rank-0.log holds the learning rate of every step).
# Usage: tools/scaling_training.sh [--out results/training] [-- extra flags for solution09]
# Env: MPIRUN (mpirun with its flags).
set -eu
cd "$(dirname "$0")/.."
out=results/training extra=""
while [ $# -gt 0 ]; do
    case $1 in
    --out) out=$2; shift ;;
    --) shift; extra="$*"; break ;;
    *) echo "scaling_training: unknown option $1 (see the head of $0)" >&2; exit 2 ;;
    esac
    shift
done
[ -x ./solution09 ] || { echo "scaling_training: ./solution09 is missing (make solution09)" >&2; exit 1; }
MPIRUN=${MPIRUN:-mpirun --oversubscribe $( [ "$(id -u)" = 0 ] && echo --allow-run-as-root )}
mkdir -p "$out"
rm -rf "$out/trace-ranks2"
for n in 1 2; do
    log=$out/ranks$n.txt
    trace=""
    [ "$n" = 2 ] && trace=$out/trace-ranks2
    echo "scaling_training: $n rank(s), 3 epochs, --warmup-epochs 2 -> $log" >&2
    # shellcheck disable=SC2086
    if ! HVDLAB_TRACE=$trace $MPIRUN -x HVDLAB_TRACE -n "$n" ./solution09 --epochs 3 \
           --warmup-epochs 2 --target-accuracy 1 $extra > "$log" 2>&1; then
        echo "scaling_training: the $n-rank run failed; see $log" >&2
        tail -3 "$log" >&2
        exit 1
    fi
    grep -a '^Test accuracy' "$log" | sed "s/^/scaling_training: $n rank(s): /" >&2
done
