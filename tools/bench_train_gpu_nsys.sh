#!/bin/sh
# bench_train_gpu_nsys.sh — make bench-train-gpu-nsys: what limits the kit's training step on the
# GPU (issue 12 asks: kernel launch overhead, a slow layer, the input copy), measured with Nsight
# Systems. For each row (default: wrn-16-4 at batch 512, the row furthest behind PyTorch) and each
# way batch norm loads (one element a thread at a time, the default, and batched,
# HVDLAB_BN_BATCH=1, the opt-in this is to help decide), nsys
# records the timed steps of bench/train_speed_gpu (the program brackets them with
# cudaProfilerStart/Stop), exports them to SQLite, and tools/nsys_gpu_busy.py prints how busy the
# GPU was, the kernels and the copies, per step. A row that fails prints the tail of its log; the
# exit is then 1.
#
# Env: NSYS (nsys; else found on PATH, in $CUDA_HOME/bin (/usr/local/cuda), its
# nsight-systems-*/bin, /opt/nvidia/nsight-systems/*/bin, or under NSYS_ROOTS),
# KIT (build/cuda/bench/train_speed_gpu), ROWS ("wrn-16-4:512"), BN_BATCH ("0 1": the values of
# HVDLAB_BN_BATCH), STEPS (10), BENCH_DIR (build/cuda: the reports, exports and logs go there as
# nsys_<model>_b<batch>_batch<v>.*).
# tests/bench/bench_train_gpu_nsys.sh runs it with a stand-in nsys.
set -u
KIT=${KIT:-build/cuda/bench/train_speed_gpu}
ROWS=${ROWS:-wrn-16-4:512}
BN_BATCH=${BN_BATCH:-0 1}
STEPS=${STEPS:-10}
BENCH_DIR=${BENCH_DIR:-build/cuda}
# Where the installers put it: the CUDA toolkit's own folder or its nsight-systems-<version>
# folder, NVIDIA's package (/opt/nvidia/nsight-systems/<version>), or a pip wheel. The GPU
# machine's notes say it is installed, yet on 2026-11-26 it was in none of the first three
# places, hence the search of the usual roots at the end.
NSYS_ROOTS=${NSYS_ROOTS:-/usr/local /opt /usr/lib}
if [ -z "${NSYS:-}" ]; then
    NSYS=$(command -v nsys)
    cuda=${CUDA_HOME:-/usr/local/cuda}
    for c in "$cuda"/bin/nsys "$cuda"/nsight-systems-*/bin/nsys \
        /opt/nvidia/nsight-systems/*/bin/nsys; do
        [ -z "$NSYS" ] && [ -x "$c" ] && NSYS=$c
    done
    # shellcheck disable=SC2086 # NSYS_ROOTS is a list
    [ -z "$NSYS" ] && NSYS=$(find $NSYS_ROOTS -maxdepth 8 -type f -name nsys -perm -u+x \
        2>/dev/null | sort | tail -1)
fi
if [ -z "$NSYS" ] || [ ! -x "$NSYS" ]; then
    echo "bench-train-gpu-nsys: no nsys${NSYS:+ at $NSYS} (looked on PATH, in" \
        "${CUDA_HOME:-/usr/local/cuda}/bin, its nsight-systems-*/bin," \
        "/opt/nvidia/nsight-systems/*/bin and under $NSYS_ROOTS; NSYS=path names it)"
    exit 1
fi
echo "bench-train-gpu-nsys: $NSYS"
mkdir -p "$BENCH_DIR" || exit 2

rc=0
for row in $ROWS; do
    m=${row%:*} b=${row#*:}
    for bt in $BN_BATCH; do
        o=$BENCH_DIR/nsys_${m}_b${b}_batch$bt
        label="$m batch $b, HVDLAB_BN_BATCH=$bt"
        rm -f "$o".nsys-rep "$o".sqlite
        if HVDLAB_BN_BATCH=$bt "$NSYS" profile --trace=cuda --sample=none --cpuctxsw=none \
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
