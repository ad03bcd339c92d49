#!/bin/sh
# tta.sh — time to accuracy: the kit (./solution10) next to PyTorch DDP (bench/peer_ddp.py), the
# same recipe, the same ranks and threads, interleaved seed by seed in one run.
#
#   MPIRUN="mpirun ..." sh tools/tta.sh [SEEDS [EPOCHS [NP]]] [-- flags for both programs]
#   defaults: SEEDS "1 2 3", EPOCHS 4, NP 2; both get --train-subset 0 --test-subset 0
#   --patience 99 (no early stop: every seed runs every epoch, so the epochs can be averaged)
#
# Every epoch line is stamped with the wall time since its program was launched (start-up, data
# loading and validation included: what a user waits for). Prints one row per program, seed and
# epoch, then per epoch the mean and range of val_accuracy over the seeds and the mean wall time,
# then per seed the time at which val_accuracy first exceeded TTA_TARGET (default 0.85), and the
# mean of those times over the seeds where both programs reached it.
# Logs: $TTA_DIR (default build/tta).
# The GPU's (make bench-tta-gpu): TTA_KIT (default ./solution10: the program the kit runs),
# TTA_KIT_FLAGS (flags for it alone), TTA_PY (default /usr/bin/python3: a python3 whose torch has
# CUDA there), TTA_PEER_FLAGS (flags for peer_ddp.py alone: --device cuda --amp bf16) and
# TTA_RUN_TIMEOUT (seconds a run may take, 0 = no limit: a run cut short keeps its epochs so far).
set -u
SEEDS="1 2 3" EPOCHS=4 NP=2
i=0
while [ $# -gt 0 ] && [ "$1" != "--" ] && [ $i -lt 3 ]; do # up to three positionals, then --
    case $i in 0) SEEDS=$1 ;; 1) EPOCHS=$1 ;; 2) NP=$1 ;; esac
    i=$((i + 1))
    shift
done
[ "${1:-}" = "--" ] && shift
MPIRUN=${MPIRUN:-mpirun}
TARGET=${TTA_TARGET:-0.85}
DIR=${TTA_DIR:-build/tta}
PY=${TTA_PY:-/usr/bin/python3}
KIT=${TTA_KIT:-./solution10}
KIT_FLAGS=${TTA_KIT_FLAGS:-}
PEER_FLAGS=${TTA_PEER_FLAGS:-}
LIMIT=${TTA_RUN_TIMEOUT:-0}
mkdir -p "$DIR" || exit 1
[ -x "$KIT" ] || { echo "tta: $KIT missing (make solution10)"; exit 1; }
"$PY" -c "import torch" 2>/dev/null || { echo "tta: no PyTorch at $PY (make setup: python3-torch)"; exit 1; }

COMMON="--train-subset 0 --test-subset 0 --patience 99 --epochs $EPOCHS"

# stamp NAME: read a program's output, keep the epoch-end lines as "NAME EPOCH WALL_S VAL_ACC".
stamp() {
    start=$(date +%s.%N)
    stdbuf -oL tr '\r' '\n' | while IFS= read -r line; do
        case "$line" in
        *val_accuracy*)
            n=$((${n:-0} + 1))
            acc=$(printf '%s\n' "$line" | sed 's/.*val_accuracy:* *\([0-9.]*\).*/\1/')
            printf '%s %d %.1f %s\n' "$1" "$n" "$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')" "$acc" ;;
        esac
    done
}

: >"$DIR/rows"
for s in $SEEDS; do
    # shellcheck disable=SC2086  # flags are words
    timeout -k 5 "$LIMIT" $MPIRUN -n "$NP" "$KIT" $COMMON --seed "$s" $KIT_FLAGS "$@" \
        2>"$DIR/kit.$s.err" | tee "$DIR/kit.$s.log" | stamp "kit.$s" | tee -a "$DIR/rows"
    timeout -k 5 "$LIMIT" "$PY" bench/peer_ddp.py --np "$NP" --threads 1 $COMMON --seed "$s" \
        $PEER_FLAGS "$@" 2>"$DIR/torch.$s.err" | tee "$DIR/torch.$s.log" | stamp "torch.$s" |
        tee -a "$DIR/rows"
done

awk -v target="$TARGET" '
{ split($1, p, "."); prog = p[1]; seed = p[2]; e = $2
  acc[prog, e] += $4; n[prog, e]++; t[prog, e] += $3
  if (!((prog, e) in lo) || $4 < lo[prog, e]) lo[prog, e] = $4
  if (!((prog, e) in hi) || $4 > hi[prog, e]) hi[prog, e] = $4
  if (e > maxe) maxe = e
  if ($4 > target && !((prog, seed) in hit)) { hit[prog, seed] = $3 " s (epoch " e ")"; hitt[prog, seed] = $3 }
  seeds[seed] = 1 }
END {
  printf "\n%-6s | %-29s | %-29s\n", "epoch", "kit val_acc mean (range), wall", "torch val_acc mean (range), wall"
  for (e = 1; e <= maxe; e++) {
    for (i = 0; i < 2; i++) {
      pr = i ? "torch" : "kit"
      c[i] = n[pr, e] ? sprintf("%.4f (%.4f-%.4f) %5.0f s", acc[pr, e] / n[pr, e], lo[pr, e], hi[pr, e], t[pr, e] / n[pr, e]) : "-"
    }
    printf "%-6d | %-29s | %-29s\n", e, c[0], c[1]
  }
  printf "\ntime to val_accuracy > %s:\n", target
  for (s in seeds)
    printf "  seed %s: kit %s, torch %s\n", s, ((("kit", s) in hit) ? hit["kit", s] : "not reached"), ((("torch", s) in hit) ? hit["torch", s] : "not reached")
  for (e = 1; e <= maxe; e++)
    if (n["torch", e] && n["kit", e]) printf "tta.epoch%d.wall_ratio %.3f x (kit/torch)\n", e, t["kit", e] / t["torch", e]
  for (s in seeds) if ((("kit", s) in hitt) && (("torch", s) in hitt)) { both++; tk += hitt["kit", s]; tt += hitt["torch", s] }
  if (both) printf "tta.time_to_target.mean %.1f s kit, %.1f s torch, ratio %.3f x over the %d seed(s) where both reached it\n", tk / both, tt / both, tk / tt, both
}' "$DIR/rows"
