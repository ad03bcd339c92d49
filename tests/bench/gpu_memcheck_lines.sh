#!/bin/sh
# gpu_memcheck_lines.sh — tools/gpu_memcheck.sh (make gpu-memcheck) with a stand-in for
# compute-sanitizer that prints memcheck's summary lines: clean runs, a run with errors (its count
# and first error named, exit 1), a program that fails without memcheck errors, a run its time
# limit cuts, the variables reaching the program and not the sanitizer, a script stopped from
# outside taking its run with it, and no sanitizer at all (exit 2). Runs without a GPU: it checks
# the script, not the kit's kernels.
set -u
SCRIPT=${1:-tools/gpu_memcheck.sh}
TEST=gpu_memcheck_lines
# shellcheck source=tests/bench/check.sh
. "$(dirname "$0")/check.sh"

# The sanitizer: records what it was given and which variables the program would see, then acts
# as MODE says for the run whose program or variables match MODE_RUN (else clean).
cat >"$d/sanitizer" <<'EOF'
#!/bin/sh
echo "args: $* | layout=${HVDLAB_ACTIVATION_LAYOUT:-} fold=${HVDLAB_BIAS_IN_BN:-} fork=${CK_FORK:-} case=${CK_RUN_CASE:-}" >>"$CALLS"
case "$*|${HVDLAB_ACTIVATION_LAYOUT:-}|${CK_FORK:-}" in
*"${MODE_RUN:-none}"*) mode=${MODE:-clean} ;;
*) mode=clean ;;
esac
echo "========= COMPUTE-SANITIZER"
case $mode in
errors)
    echo "========= Invalid __global__ read of size 4 bytes"
    echo "=========     at bn_fwd_kernel+0x1d0"
    echo "========= Invalid __global__ read of size 4 bytes"
    echo "========= ERROR SUMMARY: 2 errors"
    exit 99 ;;
fail)
    echo "hvdlab: error: [rank 0] wrn_create: out of GPU memory"
    echo "========= ERROR SUMMARY: 0 errors"
    exit 1 ;;
slow)
    sleep 5 ;;
hang) # the program's pid for the check that it is gone when the script is stopped
    echo $$ >"$CALLS.pid"
    exec sleep 30 ;;
esac
echo "========= ERROR SUMMARY: 0 errors"
EOF
chmod +x "$d/sanitizer"
export SANITIZER="$d/sanitizer" BUILD_DIR="$d/build" CALLS="$d/calls" LIMIT=2
mkdir -p "$d/build"

: >"$CALLS"
sh "$SCRIPT" >"$d/out" 2>&1
check "all clean: exit 0" $?
[ "$(grep -c ': clean$' "$d/out")" -eq 3 ]
check "three runs, each clean" $?
grep -q '^args: --tool memcheck --error-exitcode 99 --print-limit 20 '"$d"'/build/bench/train_speed_gpu --models wrn-16-2 --batches 16 --iters 2 --profile 1 | layout= fold= fork= case=$' "$CALLS" &&
    grep -q 'train_speed_gpu .* | layout=nchw fold=0 fork= case=$' "$CALLS" &&
    grep -q 'test_twins_cuda | layout= fold= fork=no case=kernels$' "$CALLS"
check "each run's program, arguments and variables" $?

MODE=errors MODE_RUN=nchw sh "$SCRIPT" >"$d/out" 2>&1
[ $? -eq 1 ]
check "memcheck errors: exit 1" $?
grep -q '^gpu-memcheck: training steps, NCHW with the bias in the convolutions: 2 error(s), first: Invalid __global__ read of size 4 bytes (all in .*/memcheck_2.log)$' "$d/out"
check "memcheck errors: the count and the first named" $?
[ "$(grep -c ': clean$' "$d/out")" -eq 2 ]
check "memcheck errors: the other runs still run" $?

MODE=fail MODE_RUN=test_twins_cuda sh "$SCRIPT" >"$d/out" 2>&1
[ $? -eq 1 ] && grep -q '^gpu-memcheck: test_twins_cuda, the kit.s kernels: exit 1 (no memcheck errors); the end of' "$d/out" &&
    grep -q '^  hvdlab: error: \[rank 0\] wrn_create: out of GPU memory$' "$d/out"
check "a failing program: exit 1, its exit and its log's end" $?

MODE=slow MODE_RUN=test_twins_cuda sh "$SCRIPT" >"$d/out" 2>&1
[ $? -eq 1 ] && grep -q '^gpu-memcheck: test_twins_cuda, the kit.s kernels: cut at 2 s' "$d/out"
check "a run past its limit: cut, exit 1" $?

# Stopped from outside (gpu_session.sh's time limit on make gpu-memcheck signals its process
# group; timeout(1) in the script has a group of its own): the run under memcheck goes too,
# rather than going on for up to LIMIT s beside gpu_session.sh's next stages.
rm -f "$CALLS.pid"
MODE=hang MODE_RUN=test_twins_cuda LIMIT=60 timeout 3 sh "$SCRIPT" >"$d/out" 2>&1
sleep 1
gone=0
if [ -s "$CALLS.pid" ]; then
    if kill -0 "$(cat "$CALLS.pid")" 2>/dev/null; then
        kill "$(cat "$CALLS.pid")" 2>/dev/null # this test's own stand-in
    else
        gone=1
    fi
fi
[ "$gone" -eq 1 ]
check "stopped from outside: the run under memcheck stops too" $?

SANITIZER="$d/none" sh "$SCRIPT" >"$d/out" 2>&1
[ $? -eq 2 ] && grep -q '^gpu-memcheck: no compute-sanitizer at .*/none' "$d/out"
check "no sanitizer: one line, exit 2" $?

finish
