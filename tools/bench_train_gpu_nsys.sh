#!/bin/sh
# bench_train_gpu_nsys.sh — make bench-train-gpu-nsys: what limits the kit's training step on the
# GPU (issue 12 asks: kernel launch overhead, a slow layer, the input copy), measured with Nsight
# Systems. For each row (default: wrn-16-4 at batch 512, the row furthest behind PyTorch) and each
# batch-norm layout (one block per channel, the default, and HVDLAB_BN_SPLIT=1), nsys records the
# timed steps of bench/train_speed_gpu (the program brackets them with cudaProfilerStart/Stop),
# exports them to SQLite, and tools/nsys_gpu_busy.py prints how busy the GPU was, the kernels and
# the copies, per step. A row that fails prints the tail of its log; the exit is then 1.
#
# Env: NSYS (nsys; else found on PATH, in $CUDA_HOME/bin (/usr/local/cuda) or
# /opt/nvidia/nsight-systems/*/bin),
# KIT (build/cuda/bench/train_speed_gpu), ROWS ("wrn-16-4:512"), SPLITS ("0 1"), STEPS (10),
# OUT (build/cuda: the reports, exports and logs go there as nsys_<model>_b<batch>_split<s>.*).
# tests/bench/bench_train_gpu_nsys.sh runs it with a stand-in nsys.
set -u
KIT=${KIT:-build/cuda/bench/train_speed_gpu}
ROWS=${ROWS:-wrn-16-4:512}
SPLITS=${SPLITS:-0 1}
STEPS=${STEPS:-10}
OUT=${OUT:-build/cuda}
if [ -z "${NSYS:-}" ]; then
    NSYS=$(command -v nsys)
    for c in "${CUDA_HOME:-/usr/local/cuda}/bin/nsys" /opt/nvidia/nsight-systems/*/bin/nsys; do
        [ -z "$NSYS" ] && [ -x "$c" ] && NSYS=$c
    done
fi
if [ -z "$NSYS" ] || [ ! -x "$NSYS" ]; then
    echo "bench-train-gpu-nsys: no nsys${NSYS:+ at $NSYS} (looked on PATH, in" \
        "${CUDA_HOME:-/usr/local/cuda}/bin and /opt/nvidia/nsight-systems/*/bin; NSYS=path names it)"
    exit 1
fi
mkdir -p "$OUT" || exit 2

rc=0
for row in $ROWS; do
    m=${row%:*} b=${row#*:}
    for split in $SPLITS; do
        o=$OUT/nsys_${m}_b${b}_split$split
        label="$m batch $b, HVDLAB_BN_SPLIT=$split"
        rm -f "$o".nsys-rep "$o".sqlite
        if HVDLAB_BN_SPLIT=$split "$NSYS" profile --trace=cuda --sample=none --cpuctxsw=none \
            --capture-range=cudaProfilerApi --capture-range-end=stop --force-overwrite=true \
            -o "$o" "$KIT" --models "$m" --batches "$b" --iters "$STEPS" --profile 0 \
            >"$o.log" 2>&1 &&
            "$NSYS" export --type=sqlite --force-overwrite=true -o "$o.sqlite" "$o.nsys-rep" \
                >>"$o.log" 2>&1 &&
            python3 tools/nsys_gpu_busy.py "$o.sqlite" --steps "$STEPS" --label "$label"; then
            # the bench's own figure, as it ran under nsys (tracing slows the launches a little)
            awk -v l="$label" '$1 ~ /\.images_per_s$/ {
                printf "bench-train-gpu-nsys: %s: under nsys the bench measured %s images/s\n", l, $2 }' \
                "$o.log"
        else
            rc=1
            echo "bench-train-gpu-nsys: $label: failed; the end of $o.log:"
            tail -5 "$o.log" | sed 's/^/  /'
        fi
    done
done
exit $rc
