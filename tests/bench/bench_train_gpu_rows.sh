#!/bin/sh
# bench_train_gpu_rows.sh — tools/bench_train_gpu.sh (make bench-train-gpu) with stand-ins for
# bench/train_speed_gpu and bench/peer_torch.py that print their exact line formats: each row's
# line and ratios, the line coming right after its row's runs (before the next row's), the
# profile lines, and a row whose kit fails (its line with "-", the last line naming it with the
# first error, exit 1). Runs without a GPU: it checks the text processing, not a measurement.
set -u
SCRIPT=${1:-tools/bench_train_gpu.sh}
TEST=bench_train_gpu_rows
# shellcheck source=tests/bench/check.sh
. "$(dirname "$0")/check.sh"

# The kit: 1200 images/s per 128 of batch and 6 MiB of memory per image by default, 1000 and 7
# with HVDLAB_ACTIVATION_LAYOUT=nchw, 500 with HVDLAB_BIAS_IN_BN=0; by default (only) the host
# waits 96 of its 128 ms a step in 3 waits; FAIL_ROW=model/batch fails that row as the real one
# does, and SLOW_ROW=model/batch makes that row slower (0.9x the peer) and larger (10 MiB an
# image against the peer's 9) than the peer.
cat >"$d/kit" <<'EOF'
#!/bin/sh
m=$2 b=$4 prof=3
[ "${6:-}" = 0 ] && prof=0
if [ "$m/b$b" = "${FAIL_ROW:-}" ]; then
    echo "hvdlab: error: [rank 0] wrn_create: out of GPU memory for $m at batch $b"
    exit 1
fi
f=1.2 mem=6
[ "${HVDLAB_ACTIVATION_LAYOUT:-auto}" = nchw ] && f=1 mem=7
[ "${HVDLAB_BIAS_IN_BN:-1}" = 0 ] && f=0.5
[ "$m/b$b" = "${SLOW_ROW:-}" ] && f=0.9 mem=10
awk -v m="$m" -v b="$b" -v f="$f" -v prof="$prof" -v mem="$mem" 'BEGIN {
    printf "kit.%s.b%d.images_per_s %.1f images/s\n", m, b, 1000 * b / 128 * f
    printf "kit.%s.b%d.step_ms %.2f ms\n", m, b, 128
    printf "kit.%s.b%d.peak_gpu %.1f MiB\n", m, b, mem * b
    if (f == 1.2)
        printf "kit.%s.b%d.host_wait_ms %.2f ms in %.1f waits a step (the host waiting for " \
               "the GPU)\n", m, b, 96, 3
    if (prof) {
        printf "kit.%s.b%d.prof_step_ms %.2f ms (profiled: a stream wait around each layer)\n", m, b, 20 / f
        printf "kit.%s.b%d.prof %.3f ms %.1f %% %dx %s\n", m, b, 8, 40, 10, "bn forward"
        printf "kit.%s.b%d.prof %.3f ms %.1f %% %dx %s\n", m, b, 6, 30, 9, "conv backward"
    }
}'
EOF
# The peer: 1000 images/s per 128 of batch.
cat >"$d/peer" <<'EOF'
#!/bin/sh
while [ $# -gt 0 ]; do
    case $1 in --model) m=$2 ;; --batch) b=$2 ;; esac
    shift
done
echo "torch.$m.t1.images_per_s $((1000 * b / 128)).0 images/s"
echo "torch.$m.t1.step_ms 128.00 ms"
echo "torch.$m.t1.peak_gpu $((9 * b)).0 MiB"
EOF
chmod +x "$d/kit" "$d/peer"
# OUT, as the GPU machine's `run` sets it: the raw rows must not go there
export KIT="$d/kit" PEER="$d/peer" BENCH_DIR="$d/raw" OUT="$d/run-out"

sh "$SCRIPT" >"$d/out" 2>&1
rc=$?
check "every row: exit 0" "$rc"
grep -q '^bench-train-gpu: wrn-16-4  batch 512: kit   4800.0 images/s, torch   4000.0, ratio  1.20; peak GPU MiB kit 3072.0, torch 4608.0; kit in NCHW 4000.0 images/s (ratio 1.00, peak 3584.0 MiB), with HVDLAB_BIAS_IN_BN=0 2000.0 (ratio 0.50)$' "$d/out"
check "a row's line, its ratios and memory" $?
[ "$(grep -c '^bench-train-gpu: wrn-16' "$d/out")" -eq 4 ]
check "four row lines" $?
row=$(grep -n '^bench-train-gpu: wrn-16-4  batch 128' "$d/out" | cut -d: -f1)
next=$(grep -n '^kit\.wrn-16-4\.b512\.' "$d/out" | head -1 | cut -d: -f1)
[ -n "$row" ] && [ -n "$next" ] && [ "$row" -lt "$next" ]
check "a row's line before the next row runs" $?
grep -q '^bench-train-gpu:   wrn-16-10 b512 HVDLAB_BIAS_IN_BN=0 where the GPU time goes (profiled step 40.00 ms): 40.0 % bn forward, 30.0 % conv backward$' "$d/out"
check "the profile lines" $?
grep -q '^bench-train-gpu:   wrn-16-4 b128 where the GPU time goes (profiled step 16.67 ms): 40.0 % bn forward, 30.0 % conv backward; timed steps: the host waited 96.00 of 128.00 ms a step for the GPU (3.0 waits), its own work 32.00 ms$' "$d/out"
check "the default way's profile line, with the host's waits" $?
grep -q '^bench-train-gpu:   wrn-16-4 b128 NCHW where the GPU time goes (profiled step 20.00 ms): 40.0 % bn forward, 30.0 % conv backward$' "$d/out"
check "the NCHW way's profile line" $?
grep -q '^bench-train-gpu: NHWC against NCHW (images/s ratio): wrn-16-4 b128 1.20, wrn-16-4 b512 1.20, wrn-16-10 b128 1.20, wrn-16-10 b512 1.20; faster at every row$' "$d/out"
check "the layout verdict" $?
grep -q '^bench-train-gpu: the bias folded into batch norm against not (HVDLAB_BIAS_IN_BN=0) (images/s ratio): wrn-16-4 b128 2.40, wrn-16-4 b512 2.40, wrn-16-10 b128 2.40, wrn-16-10 b512 2.40; faster at every row$' "$d/out"
check "the fold's verdict" $?
grep -q '^bench-train-gpu: kit >= 1.0x PyTorch eager images/s at every row: met (lowest 1.20, wrn-16-4 b128)$' "$d/out"
check "the speed target met" $?
grep -q '^bench-train-gpu: kit peak GPU memory <= PyTorch eager at every row: met$' "$d/out"
check "the memory target met" $?
! grep -q 'no figure' "$d/out"
check "no missing-row line" $?

SLOW_ROW=wrn-16-10/b512 sh "$SCRIPT" >"$d/out" 2>&1
check "a row slower than the peer: exit 0" $?
grep -q '^bench-train-gpu: kit >= 1.0x PyTorch eager images/s at every row: NOT met at wrn-16-10 b512 0.90$' "$d/out"
check "a row slower than the peer: the speed target not met, the row named" $?
grep -q '^bench-train-gpu: kit peak GPU memory <= PyTorch eager at every row: NOT met at wrn-16-10 b512 5120.0/4608.0 MiB$' "$d/out"
check "a row larger than the peer: the memory target not met, the row named" $?
[ -s "$d/raw/bench_gpu.kit" ] && [ -s "$d/raw/bench_gpu.torch" ] && [ ! -e "$d/run-out" ]
check "the raw rows in BENCH_DIR, none in OUT" $?

FAIL_ROW=wrn-16-10/b128 sh "$SCRIPT" >"$d/out" 2>&1
rc=$?
[ "$rc" -eq 1 ]
check "a failed row: exit 1" $?
grep -q '^bench-train-gpu: wrn-16-10 batch 128: kit        - images/s, torch   1000.0, ratio     -;' "$d/out"
check "a failed row's line" $?
grep -q '^bench-train-gpu: no figure for wrn-16-10/b128; first error: hvdlab: error: \[rank 0\] wrn_create: out of GPU memory for wrn-16-10 at batch 128$' "$d/out"
check "the missing row named, with the first error" $?
grep -q '^bench-train-gpu: wrn-16-10 batch 512: kit   4800.0' "$d/out"
check "the rows after it still run" $?
grep -q '^bench-train-gpu: NHWC against NCHW (images/s ratio): .*wrn-16-10 b128 -, .*; not faster at every row$' "$d/out"
check "a failed row: the layout verdict says not every row" $?
grep -q '^bench-train-gpu: the bias folded .*wrn-16-10 b128 -, .*; not faster at every row$' "$d/out"
check "a failed row: the fold's verdict says not every row" $?
grep -q '^bench-train-gpu: kit >= 1.0x PyTorch eager images/s at every row: NOT met at wrn-16-10 b128 -$' "$d/out"
check "a failed row: the speed target not met" $?
grep -q '^bench-train-gpu: kit peak GPU memory <= PyTorch eager at every row: NOT met at wrn-16-10 b128 -/1152.0 MiB$' "$d/out"
check "a failed row: the memory target not met" $?

finish
