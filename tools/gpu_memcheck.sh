#!/bin/sh
# gpu_memcheck.sh — make gpu-memcheck: the kit's GPU code under compute-sanitizer's memcheck, the
# GPU's counterpart of the CPU builds' ASan run (out-of-bounds and misaligned device accesses,
# invalid frees, CUDA API errors), on a GPU machine after the CUDA build. Three runs, each under
# its own time limit, each the process the sanitizer watches:
#   - training steps of wrn-16-2 at batch 16 as the kit trains by default (NHWC, the bias folded
#     into batch norm): bench/train_speed_gpu, 2 timed steps and 1 profiled (its CUDA events);
#   - the same in NCHW with the bias in the convolutions (HVDLAB_ACTIVATION_LAYOUT=nchw
#     HVDLAB_BIAS_IN_BN=0: cuBLAS's bias gradient, NCHW's batch-norm kernels);
#   - test_twins_cuda's case of the kit's own kernels (CK_RUN_CASE=kernels: batch norm, ReLU and
#     dropout, pooling, cross-entropy, every way, against the CPU; its other case is cuDNN's Find
#     over every convolution shape, minutes under memcheck), in one process (CK_FORK=no, as the
#     suite sets itself: CUDA does not survive a fork).
# Small shapes, as memcheck slows kernels by one or two orders of magnitude. One line per run:
#   gpu-memcheck: <what>: clean | <N> error(s), first: <its line> | exit <N> (no memcheck errors;
#   the end of its log) | cut at <LIMIT> s
# and exit 1 if any run had errors, failed or was cut; 2 if there is no compute-sanitizer.
#
# Env: SANITIZER (compute-sanitizer; else found on PATH, in $CUDA_HOME/bin (/usr/local/cuda),
# /usr/local/cuda*/bin or under /opt/nvidia), BUILD_DIR (build/cuda: the binaries; the logs go
# there as memcheck_<n>.log), LIMIT (seconds a run, 150).
# tests/bench/gpu_memcheck_lines.sh runs it with a stand-in sanitizer.
set -u
BUILD_DIR=${BUILD_DIR:-build/cuda}
LIMIT=${LIMIT:-150}
if [ -z "${SANITIZER:-}" ]; then
    SANITIZER=$(command -v compute-sanitizer)
    for c in "${CUDA_HOME:-/usr/local/cuda}"/bin/compute-sanitizer \
        /usr/local/cuda*/bin/compute-sanitizer; do
        [ -z "$SANITIZER" ] && [ -x "$c" ] && SANITIZER=$c
    done
    [ -z "$SANITIZER" ] && SANITIZER=$(find /opt/nvidia -maxdepth 6 -type f \
        -name compute-sanitizer -perm -u+x 2>/dev/null | sort | tail -1)
fi
if [ -z "$SANITIZER" ] || [ ! -x "$SANITIZER" ]; then
    echo "gpu-memcheck: no compute-sanitizer${SANITIZER:+ at $SANITIZER} (looked on PATH, in" \
        "${CUDA_HOME:-/usr/local/cuda}/bin, /usr/local/cuda*/bin and under /opt/nvidia;" \
        "SANITIZER=path names it)"
    exit 2
fi
echo "gpu-memcheck: $SANITIZER"

rc=0 n=0 run=
# timeout(1) puts each run in a process group of its own, which a signal to this script's group
# (gpu_session.sh's time limit on the make stage) does not reach: pass it on, so that the run
# under memcheck does not go on for up to LIMIT s beside gpu_session.sh's next stages.
trap '[ -n "$run" ] && kill -TERM "$run" 2>/dev/null; exit 143' TERM INT HUP
# memcheck WHAT VAR=value... -- PROGRAM ARGS...: one run and its line.
memcheck() {
    what=$1
    shift
    n=$((n + 1))
    log=$BUILD_DIR/memcheck_$n.log
    # The variables before --, for the program (env keeps them off the sanitizer's command line).
    vars=
    while [ "$1" != -- ]; do
        vars="$vars $1"
        shift
    done
    shift
    # shellcheck disable=SC2086 # vars: words, each VAR=value
    timeout -k 5 "$LIMIT" env $vars "$SANITIZER" --tool memcheck --error-exitcode 99 \
        --print-limit 20 "$@" >"$log" 2>&1 &
    run=$!
    wait "$run"
    r=$?
    run=
    errs=$(sed -n 's/^========= ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$log" | tail -1)
    if [ "$r" -eq 124 ] || [ "$r" -eq 137 ]; then
        echo "gpu-memcheck: $what: cut at $LIMIT s (LIMIT=seconds gives it more)"
        rc=1
    elif [ -n "$errs" ] && [ "$errs" -gt 0 ]; then
        # an error's first line ("Invalid __global__ read ...", "Program hit cudaError..."),
        # not the banner (COMPUTE-SANITIZER) or the summary
        first=$(grep -m1 '^========= [A-Z][a-z]' "$log" | sed 's/^========= //')
        echo "gpu-memcheck: $what: $errs error(s), first: $first (all in $log)"
        rc=1
    elif [ "$r" -ne 0 ]; then
        echo "gpu-memcheck: $what: exit $r (no memcheck errors); the end of $log:"
        tail -3 "$log" | sed 's/^/  /'
        rc=1
    else
        echo "gpu-memcheck: $what: clean"
    fi
}

steps="--models wrn-16-2 --batches 16 --iters 2 --profile 1"
# shellcheck disable=SC2086 # steps: the program's arguments
memcheck "training steps, as by default (NHWC, the bias folded into batch norm)" -- \
    "$BUILD_DIR/bench/train_speed_gpu" $steps
# shellcheck disable=SC2086
memcheck "training steps, NCHW with the bias in the convolutions" \
    HVDLAB_ACTIVATION_LAYOUT=nchw HVDLAB_BIAS_IN_BN=0 -- "$BUILD_DIR/bench/train_speed_gpu" $steps
memcheck "test_twins_cuda, the kit's kernels" CK_RUN_CASE=kernels CK_FORK=no -- \
    "$BUILD_DIR/tests/unit/test_twins_cuda"
exit $rc
