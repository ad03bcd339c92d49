#!/bin/sh
# bench_train_gpu_nsys.sh — make bench-train-gpu-nsys: what limits the kit's training step on the
# GPU (issue 12 asks: kernel launch overhead, a slow layer, the input copy), measured with Nsight
# Systems. For each row (default: wrn-16-4 at batch 512, the row furthest behind PyTorch in NCHW)
# and each way (as the kit trains by default, NHWC, and in NCHW), nsys
# records the timed steps of bench/train_speed_gpu (the program brackets them with
# cudaProfilerStart/Stop), exports them to SQLite, and tools/nsys_gpu_busy.py prints how busy the
# GPU was, the kernels and the copies, per step. A row that fails prints the tail of its log; the
# exit is then 1.
#
# Env: NSYS (nsys; else found on PATH, in $CUDA_HOME/bin (/usr/local/cuda), its
# nsight-systems-*/bin, /opt/nvidia/nsight-systems/*/bin, or under NSYS_ROOTS, where a copy
# inside Nsight Compute comes last: on an H200 on 2026-11-27 the only one found, under
# /opt/nvidia/nsight-compute/, recorded but could not import its capture),
# KIT (build/cuda/bench/train_speed_gpu), ROWS ("wrn-16-4:512"), WAYS ("default
# HVDLAB_ACTIVATION_LAYOUT=nchw": each default or one VAR=value), STEPS (10), BENCH_DIR
# (build/cuda: the reports, exports and logs go there as nsys_<model>_b<batch>_<way>.*, the way
# default or the value).
# tests/bench/bench_train_gpu_nsys.sh runs it with a stand-in nsys.
set -u
KIT=${KIT:-build/cuda/bench/train_speed_gpu}
ROWS=${ROWS:-wrn-16-4:512}
WAYS=${WAYS:-default HVDLAB_ACTIVATION_LAYOUT=nchw}
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
        2>/dev/null | sort | awk '/nsight-compute/ { c = $0; next } { s = $0 }
                                  END { print s != "" ? s : c }')
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
    for way in $WAYS; do
        set -- # no variable: as by default
        [ "$way" = default ] || set -- "$way"
        o=$BENCH_DIR/nsys_${m}_b${b}_${way##*=}
        label="$m batch $b, $([ "$way" = default ] && echo "as by default" || echo "$way")"
        rm -f "$o".nsys-rep "$o".sqlite
        if env "$@" "$NSYS" profile --trace=cuda --sample=none --cpuctxsw=none \
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
            [ -e "$o.qdstrm" ] && [ ! -e "$o.nsys-rep" ] &&
                echo "bench-train-gpu-nsys: $NSYS recorded $o.qdstrm but made no report from" \
                    "it (no importer beside it); NSYS=path names a whole Nsight Systems"
        fi
    done
done
exit $rc
