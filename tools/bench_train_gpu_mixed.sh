#!/bin/sh
# bench_train_gpu_mixed.sh — mixed precision on the GPU, side by side in one run: the kit in fp32
# and in bf16 (train_speed_gpu --precision bf16) against PyTorch eager fp32, eager with
# torch.autocast(bfloat16), and (COMPILE=1) torch.compile with autocast bf16, its compile time
# reported apart. Images/s, peak GPU memory, and the fraction of the GPU's dense tensor rate for
# the precision (TF32 for fp32: the kit and the peer both let cuDNN use TF32; bf16 for bf16),
# from the nominal FLOPs of a training image (bench/peer_torch.py --flops: convolutions and the
# dense layer, forward x3).
#
# make bench-train-gpu runs it after tools/bench_train_gpu.sh (whose fp32 figures it reads from
# BENCH_DIR/bench_gpu.kit and bench_gpu.torch) with COMPILE=0: the kit in bf16 and PyTorch eager
# autocast per row, then one line per row and the targets against eager. make
# bench-train-gpu-compile runs it with COMPILE=1: torch.compile + autocast bf16 per row (each
# configuration compiles for a minute or so: apart from gpu-check), then one line per row and the
# target against it. A row the kit refuses (a build without the bf16 path says so in one line)
# shows "-" and the line at the end quotes that refusal.
#
# Env: KIT, PEER, MODELS, BATCHES, BENCH_DIR as tools/bench_train_gpu.sh; COMPILE (0);
# GPU_NAME (nvidia-smi's); DENSE_TF32, DENSE_BF16 (TFLOP/s, dense, no sparsity: default from the
# table below by GPU_NAME, else unknown and the fractions show "-").
# tests/bench/bench_train_gpu_mixed_rows.sh runs it with stand-ins.
set -u
KIT=${KIT:-build/cuda/bench/train_speed_gpu}
PEER=${PEER:-python3 bench/peer_torch.py}
MODELS=${MODELS:-wrn-16-4 wrn-16-10}
BATCHES=${BATCHES:-128 512}
BENCH_DIR=${BENCH_DIR:-build/cuda}
COMPILE=${COMPILE:-0}
GPU_NAME=${GPU_NAME:-$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)}
# Dense tensor-core TFLOP/s from NVIDIA's data sheets (SXM parts unless named).
case $GPU_NAME in
*H200* | *H100*HBM3* | *H100*SXM*) tf32=494.7 bf16=989.4 ;;
*H100*PCIe*) tf32=378 bf16=756 ;;
*A100*) tf32=156 bf16=312 ;;
*L40S*) tf32=183 bf16=362 ;;
*) tf32= bf16= ;;
esac
DENSE_TF32=${DENSE_TF32:-$tf32}
DENSE_BF16=${DENSE_BF16:-$bf16}
kitf=$BENCH_DIR/bench_gpu.kit
torchf=$BENCH_DIR/bench_gpu.torch
mixf=$BENCH_DIR/bench_gpu.mixed
mkdir -p "$BENCH_DIR" || exit 2
[ "$COMPILE" = 1 ] || : >"$mixf"
touch "$kitf" "$torchf" "$mixf"
tag=bench-train-gpu
[ "$COMPILE" = 1 ] && tag=bench-train-gpu-compile

val() { awk -v t="$1" '$1 == t { v = $2 } END { print v }' "$kitf" "$torchf" "$mixf"; }

# shellcheck disable=SC2086 # PEER is a command line
$PEER --flops --model "$(echo "$MODELS" | tr ' ' ,)" 2>&1 | tee -a "$mixf"

# $1 images/s, $2 GFLOP an image, $3 dense TFLOP/s: "12.3 %" or "-"
frac() {
    awk -v r="$1" -v g="$2" -v d="$3" 'BEGIN {
        if (r > 0 && g > 0 && d > 0) printf "%.1f %%", 100 * r * g / 1000 / d; else print "-" }'
}
s() { echo "${1:--}"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "-" }'; }

for m in $MODELS; do
    for b in $BATCHES; do
        r="$m.b$b"
        if [ "$COMPILE" = 1 ]; then
            # shellcheck disable=SC2086
            $PEER --device cuda --compile --amp bf16 --model "$m" --threads 1 --batch "$b" \
                --iters 30 2>&1 | sed "s/^torch\\.$m\\.t1\\./torch.$m.b$b./" | tee -a "$mixf"
        else
            "$KIT" --models "$m" --batches "$b" --precision bf16 --profile 0 2>&1 |
                sed 's/^kit\./kitbf16./' | tee -a "$mixf"
            # shellcheck disable=SC2086
            $PEER --device cuda --amp bf16 --model "$m" --threads 1 --batch "$b" --iters 30 2>&1 |
                sed "s/^torch\\.$m\\.t1\\./torch.$m.b$b./" | tee -a "$mixf"
        fi
        g=$(val "torch.$m.train_gflop_per_image")
        k=$(val "kit.$r.images_per_s") kb=$(val "kitbf16.$r.images_per_s")
        p=$(val "torch.$r.images_per_s") pb=$(val "torch.$r.bf16_images_per_s")
        if [ "$COMPILE" = 1 ]; then
            c=$(val "torch.$r.bf16_compiled_images_per_s")
            echo "$tag: $m batch $b: torch.compile + autocast bf16 $(s "$c") images/s" \
                "($(frac "$c" "$g" "$DENSE_BF16") of dense bf16; compiling took" \
                "$(s "$(val "torch.$r.bf16_compile_s")") s apart), peak GPU" \
                "$(s "$(val "torch.$r.bf16_compiled_peak_gpu")") MiB; kit bf16 $(s "$kb")" \
                "(ratio $(ratio "$kb" "$c")), kit fp32 $(s "$k") (ratio $(ratio "$k" "$c"))"
        else
            echo "$tag: $m batch $b mixed: kit fp32 $(s "$k") images/s" \
                "($(frac "$k" "$g" "$DENSE_TF32") of dense TF32), kit bf16 $(s "$kb")" \
                "($(frac "$kb" "$g" "$DENSE_BF16") of dense bf16); torch eager fp32 $(s "$p")" \
                "($(frac "$p" "$g" "$DENSE_TF32")), eager autocast bf16 $(s "$pb")" \
                "($(frac "$pb" "$g" "$DENSE_BF16")); kit bf16 / eager bf16 $(ratio "$kb" "$pb");" \
                "peak GPU MiB kit bf16 $(s "$(val "kitbf16.$r.peak_gpu")"), eager bf16" \
                "$(s "$(val "torch.$r.bf16_peak_gpu")")"
        fi
    done
done

# The targets (issue 48): kit bf16 >= 1.0x torch.compile + autocast bf16 at every row and
# >= 1.5x eager autocast bf16, peak memory <= eager's; a row without both figures is not met.
target() { # $1 the peer's key suffix, $2 the least ratio, $3 the words
    cat "$kitf" "$torchf" "$mixf" | awk -v models="$MODELS" -v batches="$BATCHES" -v o="$1" \
        -v least="$2" -v what="$3" -v tag="$tag" '
        { v[$1] = $2 }
        END {
            nm = split(models, M, " "); nb = split(batches, B, " "); ok = 1; l = ""
            for (i = 1; i <= nm; i++) for (j = 1; j <= nb; j++) {
                t = M[i] ".b" B[j]; k = v["kitbf16." t ".images_per_s"]; p = v["torch." t "." o]
                r = k > 0 && p > 0 ? k / p : -1
                if (r < least) {
                    ok = 0
                    l = l sprintf("%s%s b%s %s", l == "" ? "" : ", ", M[i], B[j],
                                  r < 0 ? "-" : sprintf("%.2f", r))
                }
            }
            printf "%s: kit bf16 >= %sx %s images/s at every row: %s\n", tag, least, what,
                   ok ? "met" : "NOT met at " l
        }'
}
if [ "$COMPILE" = 1 ]; then
    target bf16_compiled_images_per_s 1.0 "torch.compile + autocast bf16"
else
    target bf16_images_per_s 1.5 "PyTorch eager autocast bf16"
    cat "$kitf" "$torchf" "$mixf" | awk -v models="$MODELS" -v batches="$BATCHES" -v tag="$tag" '
        { v[$1] = $2 }
        END {
            nm = split(models, M, " "); nb = split(batches, B, " "); ok = 1; l = ""
            for (i = 1; i <= nm; i++) for (j = 1; j <= nb; j++) {
                t = M[i] ".b" B[j]; k = v["kitbf16." t ".peak_gpu"]; p = v["torch." t ".bf16_peak_gpu"]
                if (k == "" || p == "" || k + 0 > p + 0) {
                    ok = 0
                    l = l sprintf("%s%s b%s %s/%s MiB", l == "" ? "" : ", ", M[i], B[j],
                                  k == "" ? "-" : k, p == "" ? "-" : p)
                }
            }
            printf "%s: kit bf16 peak GPU memory <= PyTorch eager autocast bf16 at every row: %s\n",
                   tag, ok ? "met" : "NOT met at " l
        }'
    refused=$(grep -m1 -E 'error|precision' "$mixf" | grep -v '^torch\.' || true)
    [ -z "$(val "kitbf16.$(echo "$MODELS" | cut -d' ' -f1).b$(echo "$BATCHES" | cut -d' ' -f1).images_per_s")" ] &&
        echo "$tag: the kit in bf16 gave no figure; first line: ${refused:-none printed}"
fi
exit 0
