#!/bin/sh
# bench_train_gpu.sh — make bench-train-gpu: the kit's training images/s on the GPU against
# PyTorch eager's (bench/peer_torch.py --device cuda), row by row, each (model, batch) in its own
# processes so one failure costs only its row.
#
# A row runs the kit three ways: as it trains by default (deterministic cuDNN algorithms, batch
# norm split over blocks, NCHW activations), with HVDLAB_ACTIVATION_LAYOUT=nhwc (NHWC
# activations: cuDNN's NHWC convolutions, batch norm's and the pools' NHWC kernels) and with
# HVDLAB_BN_BATCH=1 (batch norm's threads issue several loads before using any): the opt-ins
# this bench is to decide (HVDLAB_CUDNN_DETERMINISTIC=0, the peer's cudnn.benchmark choice, was
# the second way until an H100 timed it at 0.96-1.00x the default); then the peer; then its
# "bench-train-gpu: <model> batch <b>: ..." line at once, so that a run cut short (gpu-check's
# stage limit, a GPU session's end) keeps the rows it finished. Then, per row,
# where the GPU time goes (the kit's --profile lines), and a last line naming any row without
# both figures, with the first error printed (exit 1).
#
# Env: KIT (the bench binary, build/cuda/bench/train_speed_gpu), PEER (python3
# bench/peer_torch.py), MODELS (wrn-16-4 wrn-16-10), BATCHES (128 512), BENCH_DIR (build/cuda:
# the raw rows go to BENCH_DIR/bench_gpu.kit and BENCH_DIR/bench_gpu.torch, where make
# bench-train-gpu-compile reads the kit's; not OUT, which the GPU machine's `run` sets).
# tests/bench/bench_train_gpu_rows.sh runs it with stand-ins.
set -u
KIT=${KIT:-build/cuda/bench/train_speed_gpu}
PEER=${PEER:-python3 bench/peer_torch.py}
MODELS=${MODELS:-wrn-16-4 wrn-16-10}
BATCHES=${BATCHES:-128 512}
BENCH_DIR=${BENCH_DIR:-build/cuda}
kitf=$BENCH_DIR/bench_gpu.kit
torchf=$BENCH_DIR/bench_gpu.torch
mkdir -p "$BENCH_DIR" && : >"$kitf" && : >"$torchf" || exit 2

val() { awk -v t="$1" '$1 == t { v = $2 } END { print v }' "$2"; }

# The row's line from the raw rows: $1 model, $2 batch.
row_line() {
    k=$(val "kit.$1.b$2.images_per_s" "$kitf")
    p=$(val "torch.$1.b$2.images_per_s" "$torchf")
    km=$(val "kit.$1.b$2.peak_gpu" "$kitf")
    pm=$(val "torch.$1.b$2.peak_gpu" "$torchf")
    nh=$(val "kitnhwc.$1.b$2.images_per_s" "$kitf")
    nm=$(val "kitnhwc.$1.b$2.peak_gpu" "$kitf")
    bt=$(val "kitbt.$1.b$2.images_per_s" "$kitf")
    awk -v m="$1" -v b="$2" -v k="$k" -v p="$p" -v km="$km" -v pm="$pm" -v nh="$nh" -v nm="$nm" \
        -v bt="$bt" '
        function r(x) { return x > 0 && p > 0 ? sprintf("%.2f", x / p) : "-" }
        function s(x) { return x == "" ? "-" : x }
        BEGIN {
            printf "bench-train-gpu: %-9s batch %3d: kit %8s images/s, torch %8s, ratio %5s; " \
                   "peak GPU MiB kit %s, torch %s; kit with NHWC activations %s images/s " \
                   "(ratio %s, peak %s MiB), with HVDLAB_BN_BATCH=1 %s (ratio %s)\n",
                   m, b, s(k), s(p), r(k), s(km), s(pm), s(nh), r(nh), s(nm), s(bt), r(bt)
        }'
    [ -n "$k" ] && [ -n "$p" ]
}

missing=
for m in $MODELS; do
    for b in $BATCHES; do
        "$KIT" --models "$m" --batches "$b" 2>&1 | tee -a "$kitf"
        HVDLAB_ACTIVATION_LAYOUT=nhwc "$KIT" --models "$m" --batches "$b" 2>&1 |
            sed 's/^kit\./kitnhwc./' | tee -a "$kitf"
        HVDLAB_BN_BATCH=1 "$KIT" --models "$m" --batches "$b" 2>&1 | sed 's/^kit\./kitbt./' |
            tee -a "$kitf"
        # shellcheck disable=SC2086 # PEER is a command line
        $PEER --device cuda --model "$m" --threads 1 --batch "$b" --iters 30 2>&1 |
            sed "s/^torch\\.$m\\.t1\\./torch.$m.b$b./" | tee -a "$torchf"
        row_line "$m" "$b" || missing="$missing $m/b$b"
    done
done

# Where the GPU time goes: the profiled step and its four largest parts, each way.
for m in $MODELS; do
    for b in $BATCHES; do
        for v in kit kitnhwc kitbt; do
            awk -v t="$v.$m.b$b." -v m="$m" -v b="$b" -v v="$v" '
                BEGIN { way["kit"] = ""; way["kitnhwc"] = " NHWC"; way["kitbt"] = " HVDLAB_BN_BATCH=1" }
                index($1, t) == 1 && $1 ~ /prof_step_ms$/ { s = $2 }
                index($1, t) == 1 && $1 ~ /\.prof$/ && n < 4 {
                    w = $7; for (i = 8; i <= NF; i++) w = w " " $i
                    l = l sprintf("%s%s %% %s", n ? ", " : "", $4, w); n++
                }
                END {
                    if (n) printf "bench-train-gpu:   %s b%d%s where the GPU time goes " \
                                  "(profiled step %s ms): %s\n",
                                  m, b, way[v], s, l
                }' "$kitf"
        done
    done
done
# The layout verdict: NHWC's images/s over NCHW's per row, and whether NHWC wins every row
# (the rule for making it the default; issue 12: "NCHW or NHWC, whichever measures faster").
awk -v models="$MODELS" -v batches="$BATCHES" '
    { v[$1] = $2 }
    END {
        nm = split(models, M, " "); nb = split(batches, B, " "); all = 1; n = 0
        for (i = 1; i <= nm; i++) for (j = 1; j <= nb; j++) {
            t = M[i] ".b" B[j] ".images_per_s"; k = v["kit." t]; h = v["kitnhwc." t]
            r = k > 0 && h > 0 ? sprintf("%.2f", h / k) : "-"
            if (r == "-" || r + 0 <= 1.0) all = 0
            l = l sprintf("%s%s b%s %s", n++ ? ", " : "", M[i], B[j], r)
        }
        printf "bench-train-gpu: NHWC against NCHW (images/s ratio): %s; %s\n", l,
               all ? "faster at every row" : "not faster at every row"
    }' "$kitf"
if [ -n "$missing" ]; then
    err=$(cat "$kitf" "$torchf" | grep -m1 -i 'error')
    echo "bench-train-gpu: no figure for$missing; first error: ${err:-none printed}"
    exit 1
fi
