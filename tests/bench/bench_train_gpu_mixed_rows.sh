#!/bin/sh
# bench_train_gpu_mixed_rows.sh — tools/bench_train_gpu_mixed.sh (make bench-train-gpu's mixed
# precision rows, make bench-train-gpu-compile) with stand-ins for bench/train_speed_gpu and
# bench/peer_torch.py that print their exact line formats: each row's line with the fractions of
# the dense tensor rate, the targets, a kit that refuses bf16 as today's builds do (its rows "-",
# its one line quoted), and the compiled peer's rows with the compile time apart. Runs without a
# GPU: it checks the text processing, not a measurement.
set -u
SCRIPT=${1:-tools/bench_train_gpu_mixed.sh}
TEST=bench_train_gpu_mixed_rows
# shellcheck source=tests/bench/check.sh
. "$(dirname "$0")/check.sh"

# The kit in bf16: 3000 images/s per 128 of batch, 2 MiB an image; REFUSE=1: refuses as a build
# without the bf16 path does.
cat >"$d/kit" <<'EOS'
#!/bin/sh
m=$2 b=$4
if [ "${REFUSE:-0}" = 1 ]; then
    echo "train_speed_gpu: error: --precision bf16: this build trains in fp32 only"
    exit 2
fi
[ "$6" = bf16 ] || { echo "kit stand-in: called without --precision bf16"; exit 3; }
echo "kit.$m.b$b.images_per_s $((3000 * b / 128)).0 images/s"
echo "kit.$m.b$b.peak_gpu $((2 * b)).0 MiB"
EOS
# The peer: --flops 0.5 GFLOP an image for wrn-16-4, 2 for wrn-16-10; eager autocast 1500
# images/s per 128 (3 MiB an image), compiled 2500 (compile 40 s).
cat >"$d/peer" <<'EOS'
#!/bin/sh
amp= comp= flops=
while [ $# -gt 0 ]; do
    case $1 in --model) m=$2 ;; --batch) b=$2 ;; --amp) amp=$2 ;; --compile) comp=1 ;;
    --flops) flops=1 ;; esac
    shift
done
if [ -n "$flops" ]; then
    echo "torch.wrn-16-4.train_gflop_per_image 0.5000 GFLOP"
    echo "torch.wrn-16-10.train_gflop_per_image 2.0000 GFLOP"
    exit 0
fi
[ "$amp" = bf16 ] || { echo "peer stand-in: called without --amp bf16"; exit 3; }
if [ -n "$comp" ]; then
    echo "torch.$m.t1.bf16_compile_s 40.0 s (the 3 warm-up steps)"
    echo "torch.$m.t1.bf16_compiled_images_per_s $((2500 * b / 128)).0 images/s"
    echo "torch.$m.t1.bf16_compiled_peak_gpu $((3 * b)).0 MiB"
else
    echo "torch.$m.t1.bf16_images_per_s $((1500 * b / 128)).0 images/s"
    echo "torch.$m.t1.bf16_peak_gpu $((3 * b)).0 MiB"
fi
EOS
chmod +x "$d/kit" "$d/peer"
mkdir -p "$d/raw"
# the fp32 figures tools/bench_train_gpu.sh left: kit 1200, eager 1000 images/s per 128
for m in wrn-16-4 wrn-16-10; do for b in 128 512; do
    echo "kit.$m.b$b.images_per_s $((1200 * b / 128)).0 images/s" >>"$d/raw/bench_gpu.kit"
    echo "torch.$m.b$b.images_per_s $((1000 * b / 128)).0 images/s" >>"$d/raw/bench_gpu.torch"
done; done
export KIT="$d/kit" PEER="$d/peer" BENCH_DIR="$d/raw" GPU_NAME="NVIDIA H200" OUT="$d/run-out"

sh "$SCRIPT" >"$d/out" 2>&1
check "exit 0" $?
# wrn-16-10 b512: kit fp32 4800 x 2 GFLOP = 9.6 TFLOP/s of 494.7 = 1.9 %; bf16 12000 x 2 = 24 of
# 989.4 = 2.4 %; eager 4000 -> 1.6 %, autocast 6000 -> 1.2 %
grep -q '^bench-train-gpu: wrn-16-10 batch 512 mixed: kit fp32 4800.0 images/s (1.9 % of dense TF32), kit bf16 12000.0 (2.4 % of dense bf16); torch eager fp32 4000.0 (1.6 %), eager autocast bf16 6000.0 (1.2 %); kit bf16 / eager bf16 2.00; peak GPU MiB kit bf16 1024.0, eager bf16 1536.0$' "$d/out"
check "a row's line, fractions of the dense rates" $?
[ "$(grep -c '^bench-train-gpu: wrn-16-.* mixed:' "$d/out")" -eq 4 ]
check "four row lines" $?
grep -q '^bench-train-gpu: kit bf16 >= 1.5x PyTorch eager autocast bf16 images/s at every row: met$' "$d/out"
check "the eager target met" $?
grep -q '^bench-train-gpu: kit bf16 peak GPU memory <= PyTorch eager autocast bf16 at every row: met$' "$d/out"
check "the memory target met" $?

COMPILE=1 sh "$SCRIPT" >"$d/out" 2>&1
check "COMPILE=1: exit 0" $?
grep -q '^bench-train-gpu-compile: wrn-16-4 batch 128: torch.compile + autocast bf16 2500.0 images/s (0.1 % of dense bf16; compiling took 40.0 s apart), peak GPU 384.0 MiB; kit bf16 3000.0 (ratio 1.20), kit fp32 1200.0 (ratio 0.48)$' "$d/out"
check "COMPILE=1: a row's line, the compile time apart" $?
grep -q '^bench-train-gpu-compile: kit bf16 >= 1.0x torch.compile + autocast bf16 images/s at every row: met$' "$d/out"
check "COMPILE=1: the target met" $?

REFUSE=1 sh "$SCRIPT" >"$d/out" 2>&1
check "a kit refusing bf16: exit 0 (the fp32 rows are the gate)" $?
grep -q '^bench-train-gpu: wrn-16-4 batch 128 mixed: kit fp32 1200.0 images/s (0.1 % of dense TF32), kit bf16 - (- of dense bf16); torch eager fp32 1000.0 (0.1 %), eager autocast bf16 1500.0 (0.1 %); kit bf16 / eager bf16 -; peak GPU MiB kit bf16 -, eager bf16 384.0$' "$d/out"
check "a kit refusing bf16: its rows show -" $?
grep -q '^bench-train-gpu: kit bf16 >= 1.5x PyTorch eager autocast bf16 images/s at every row: NOT met at wrn-16-4 b128 -, wrn-16-4 b512 -, wrn-16-10 b128 -, wrn-16-10 b512 -$' "$d/out"
check "a kit refusing bf16: the target not met at every row" $?
grep -q '^bench-train-gpu: the kit in bf16 gave no figure; first line: train_speed_gpu: error: --precision bf16: this build trains in fp32 only$' "$d/out"
check "a kit refusing bf16: its line quoted" $?

GPU_NAME="Some GPU" sh "$SCRIPT" >"$d/out" 2>&1
grep -q '^bench-train-gpu: wrn-16-4 batch 128 mixed: kit fp32 1200.0 images/s (- of dense TF32)' "$d/out"
check "an unknown GPU: no fraction" $?

finish
