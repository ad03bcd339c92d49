#!/bin/sh
# precision_resume.sh — the checkpoint stays fp32 whatever --precision trained it, and loads into
# either precision: an epoch in bf16 resumed in fp32, and an epoch in fp32 resumed in bf16, each
# go on from epoch 1 (the trace's resume event) to a finite test loss. The bf16 epoch's
# checkpoint is as large as the fp32 one's (the same fp32 tensors) and not its bytes (bf16 did
# round: a flag that changed nothing would pass the rest). Where the build refuses bf16 (a CPU
# without AVX512_BF16 or AMX, a CUDA build) it says so and skips.
# Usage: precision_resume.sh PROGRAM (from the repository root). Env: MPIRUN. Exit 0 when all
# hold; one line per problem.
set -u
prog=${1:-./solution10}
mpirun=${MPIRUN:-mpirun --oversubscribe --allow-run-as-root}
work=$(mktemp -d /tmp/hvdlab-precision-resume-XXXXXX)
trap 'rm -rf "$work"' EXIT
bad=0
flags="--train-subset 512 --test-subset 256 --model wrn-10-1 --target-accuracy 1
       --use-checkpointing"
run() { # log dir, epochs, precision, output
    OMP_NUM_THREADS=1 HVDLAB_TRACE=$1/trace timeout 120 $mpirun -x OMP_NUM_THREADS -x HVDLAB_TRACE \
        -n 2 "$prog" $flags --log-dir "$1/logs" --epochs "$2" --precision "$3" >"$4" 2>&1
}
if ! "$prog" --precision bf16 --help >"$work/probe" 2>&1; then
    echo "precision-resume: skipped, this build refuses bf16: $(grep -m1 'error' "$work/probe")"
    exit 0
fi
for pair in "bf16 fp32" "fp32 bf16"; do
    # shellcheck disable=SC2086 # the pair is two words
    set -- $pair
    d=$work/$1-$2
    mkdir -p "$d"
    if ! run "$d" 1 "$1" "$d/first.out"; then
        echo "precision-resume: the first epoch in $1 failed:"; tail -3 "$d/first.out"
        bad=1; continue
    fi
    cp "$d/logs/checkpoint-1.ckpt" "$work/epoch1-$1.ckpt"
    rm -rf "$d/trace"
    if ! run "$d" 2 "$2" "$d/second.out"; then
        echo "precision-resume: epoch 1 of $1 resumed in $2 failed:"; tail -3 "$d/second.out"
        bad=1; continue
    fi
    if ! grep -q '^event=resume rank=0 .*epoch=1' "$d/trace/rank-0.log" 2>/dev/null; then
        echo "precision-resume: $1 then $2: no resume at epoch 1 in the trace:" \
            "$(grep -h '^event=resume' "$d/trace/rank-0.log" 2>/dev/null | head -1)"
        bad=1
    fi
    loss=$(sed -n 's/^Test loss: *//p' "$d/second.out" | tail -1)
    if ! awk -v l="$loss" 'BEGIN { exit !(l != "" && l + 0 == l && l < 1e30) }'; then
        echo "precision-resume: $1 then $2: test loss '$loss'"
        bad=1
    fi
    [ -e "$d/logs/checkpoint-2.ckpt" ] ||
        { echo "precision-resume: $1 then $2: no checkpoint-2.ckpt"; bad=1; }
done
a=$work/epoch1-bf16.ckpt b=$work/epoch1-fp32.ckpt
if [ -e "$a" ] && [ -e "$b" ]; then
    [ "$(wc -c <"$a")" -eq "$(wc -c <"$b")" ] ||
        { echo "precision-resume: the bf16 checkpoint has $(wc -c <"$a") bytes, the fp32 one $(wc -c <"$b")"; bad=1; }
    cmp -s "$a" "$b" &&
        { echo "precision-resume: the bf16 epoch's checkpoint is the fp32 one's bytes: nothing ran in bf16"; bad=1; }
fi
[ "$bad" -eq 0 ] && echo "precision-resume: an epoch in bf16 resumes in fp32 and one in fp32 in bf16 (fp32 checkpoints of the same size, not the same bytes)"
exit $bad
