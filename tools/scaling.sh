#!/bin/sh
# scaling.sh — the scaling study of chapter 11 (make scaling): bench/scaling at W ranks, each with
# cores/W threads, in strong scaling (the global batch fixed, split over the ranks) and weak
# scaling (the per-rank batch fixed), a fixed number of steps after a warm-up. Rounds interleave
# every configuration, because a shared machine drifts; the table gives the median over rounds
# (and the fastest step seen). Runs with more ranks than cores are shown, marked oversubscribed,
# and left out of any fit (tools/ringmodel reads only the rows marked no).
# Usage: tools/scaling.sh [--model wrn-16-1] [--batch 128] [--ranks 1,2,4] [--steps 10]
#        [--warmup 3] [--rounds 3] [--modes strong,weak] [--out results/scaling] [--quick]
#        [-- extra flags for bench/scaling]
# Writes OUT/raw.csv (one line per run) and OUT/scaling.csv (one per mode and W), prints the table.
# Env: BUILD (build), MPIRUN (mpirun with its flags), CORES (nproc).
set -eu
cd "$(dirname "$0")/.."
model=wrn-16-1 batch=128 ranks=1,2,4 steps=10 warmup=3 rounds=3 modes=strong,weak
out=results/scaling extra=""
# Options are checked before anything runs or is written: a missing or bad value used to stop
# the study with the shell's words for it ('2: parameter not set', 'divide by zero', 'Illegal
# number: 08'), some runs in, or to pass ('--modes wek' ran weak scaling).
need() { [ $# -ge 2 ] || { echo "scaling: $1 needs a value (see the head of $0)" >&2; exit 2; }; }
num() { # OPTION VALUE MIN: VALUE without leading zeros, or one line and status 2
    case $2 in
    '' | *[!0-9]*) ;;
    *) v=$(echo "$2" | sed 's/^0*//')
       v=${v:-0}
       [ ${#v} -le 6 ] && [ "$v" -ge "$3" ] && { echo "$v"; return 0; } ;;
    esac
    echo "scaling: $1 $2: expected a whole number from $3 to 999999" >&2
    return 2
}
while [ $# -gt 0 ]; do
    case $1 in
    --model) need "$@"; model=$2; shift ;;
    --batch) need "$@"; batch=$2; shift ;;
    --ranks) need "$@"; ranks=$2; shift ;;
    --steps) need "$@"; steps=$2; shift ;;
    --warmup) need "$@"; warmup=$2; shift ;;
    --rounds) need "$@"; rounds=$2; shift ;;
    --modes) need "$@"; modes=$2; shift ;;
    --out) need "$@"; out=$2; shift ;;
    --quick) ranks=1,2 steps=2 warmup=1 rounds=1 batch=32 extra="$extra --train-subset 1024" ;;
    --) shift; extra="$extra $*"; break ;;
    *) echo "scaling: unknown option $1 (see the head of $0)" >&2; exit 2 ;;
    esac
    shift
done
batch=$(num --batch "$batch" 1) || exit 2
steps=$(num --steps "$steps" 1) || exit 2
warmup=$(num --warmup "$warmup" 0) || exit 2
rounds=$(num --rounds "$rounds" 1) || exit 2
ms=$(echo "$modes" | tr ',' ' ')
for m in $ms; do
    case $m in strong | weak) ;; *)
        echo "scaling: --modes $modes: expected strong, weak or strong,weak" >&2; exit 2 ;;
    esac
done
[ -n "$ms" ] || { echo "scaling: --modes '$modes': expected strong, weak or strong,weak" >&2
                  exit 2; }
ws=
for w in $(echo "$ranks" | tr ',' ' '); do
    ws="$ws $(num --ranks "$w" 1)" || exit 2
    case " $ms " in *" strong "*)
        [ $((batch % ${ws##* })) -eq 0 ] || {
            echo "scaling: --batch $batch does not split over $w ranks (strong scaling)" >&2
            exit 2
        } ;;
    esac
done
[ -n "$ws" ] || { echo "scaling: --ranks '$ranks': expected rank counts such as 1,2,4" >&2; exit 2; }
B=${BUILD:-build}
bin=$B/bench/scaling
[ -x "$bin" ] || { echo "scaling: $bin is missing (make $bin)" >&2; exit 1; }
MPIRUN=${MPIRUN:-mpirun --oversubscribe $( [ "$(id -u)" = 0 ] && echo --allow-run-as-root )}
cores=${CORES:-$(nproc)}
mkdir -p "$out"
raw=$out/raw.csv
echo "round,mode,ranks,threads,oversubscribed,batch_per_rank,global_batch,steps,step_min_s,step_median_s,compute_s,comm_s,comm_max_s,comm_clock_s,images_per_s,grad_bytes" > "$raw"
r=1
while [ $r -le "$rounds" ]; do
    for m in $ms; do
        for w in $ws; do
            t=$((cores / w)); [ $t -ge 1 ] || t=1
            over=no; [ "$w" -gt "$cores" ] && over=yes
            if [ "$m" = strong ]; then
                b=$((batch / w))
            else
                b=$batch
            fi
            log=$out/log-$m-$w-$r.txt
            # --bind-to none: the runtime gives each rank its share of the cores (hvd_pin_device);
            # Open MPI's default would hold a lone rank to one core.
            # shellcheck disable=SC2086
            if ! OMP_NUM_THREADS=$t HVD_PROFILE=1 $MPIRUN --bind-to none -x OMP_NUM_THREADS \
                   -x HVD_PROFILE -n "$w" "$bin" --model "$model" --batch-size "$b" \
                   --steps "$steps" --warmup-steps "$warmup" $extra > "$log" 2>&1; then
                echo "scaling: $m W=$w failed; see $log" >&2
                tail -5 "$log" >&2
                exit 1
            fi
            row=$(grep '^row,' "$log" | head -1 | cut -d, -f2-)
            [ -n "$row" ] || { echo "scaling: no result in $log" >&2; exit 1; }
            echo "$row" | awk -F, -v r=$r -v m=$m -v o=$over -v g=$((b * w)) \
                '{ printf "%s,%s,%s,%s,%s,%s,%s", r, m, $1, $2, o, $3, g;
                   for (i = 4; i <= NF; i++) printf ",%s", $i; printf "\n" }' >> "$raw"
            echo "scaling: round $r/$rounds $m W=$w threads=$t batch/rank=$b done" >&2
        done
    done
    r=$((r + 1))
done
# Medians over rounds; speedup = images/s at W over images/s at 1 rank; efficiency = speedup over
# the ideal, the ratio of cores in use (1 when W ranks share the cores one rank had).
awk -F, -f tools/scaling_table.awk -v csv="$out/scaling.csv" -v cores="$cores" "$raw"
