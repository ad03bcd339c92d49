#!/bin/sh
# batch_size_resume.sh — a mid-epoch checkpoint resumed with another --batch-size goes on where
# the saved batches reach, counted in images: 4 batches of 32 images on 2 ranks are 256 images,
# so a run of 64-image batches resumes at batch 2 and one of 16-image batches at batch 8 (the
# checkpoint records the batch size beside the world size, ckpt_format.h). The mid-epoch
# checkpoint is made without a signal's timing: HVDLAB_ELASTIC_NOTIFY names a file that exists,
# so the run stops at its first commit (HVDLAB_ELASTIC_COMMIT_STEPS=4, train/elastic.h).
# Usage: batch_size_resume.sh PROGRAM (from the repository root). Env: MPIRUN. Exit 0 when all
# hold; one line per problem.
set -u
prog=${1:-./solution10}
mpirun=${MPIRUN:-mpirun --oversubscribe --allow-run-as-root}
work=$(mktemp -d /tmp/hvdlab-batch-resume-XXXXXX)
trap 'rm -rf "$work"' EXIT
bad=0
flags="--epochs 1 --train-subset 1024 --test-subset 256 --model wrn-10-1 --use-checkpointing"
touch "$work/notify"
for b in 64 16 32; do
    d=$work/b$b
    mkdir -p "$d"
    OMP_NUM_THREADS=1 HVDLAB_ELASTIC_COMMIT_STEPS=4 HVDLAB_ELASTIC_NOTIFY=$work/notify \
        timeout 120 $mpirun -x OMP_NUM_THREADS -x HVDLAB_ELASTIC_COMMIT_STEPS \
        -x HVDLAB_ELASTIC_NOTIFY -n 2 "$prog" $flags --batch-size 32 --log-dir "$d/logs" \
        >"$d/stop.out" 2>&1
    if [ ! -e "$d/logs/checkpoint-0.4.ckpt" ]; then
        echo "batch-size-resume: no checkpoint-0.4.ckpt after the stop at the first commit:"
        grep hvdlab "$d/stop.out" | head -3 | sed 's/^/    /'
        bad=1
        continue
    fi
    OMP_NUM_THREADS=1 HVDLAB_TRACE=$d/trace timeout 120 $mpirun -x OMP_NUM_THREADS -x HVDLAB_TRACE \
        -n 2 "$prog" $flags --batch-size "$b" --log-dir "$d/logs" >"$d/resume.out" 2>&1 ||
        { echo "batch-size-resume: the run resumed with --batch-size $b failed"; bad=1; continue; }
    want=$((4 * 32 / b))
    res=$(grep -h "^event=resume rank=0 " "$d/trace/rank-0.log" | head -1)
    case "$res" in
    *" epoch=0 batch=$want saved_batch=4 "*" batch_size=$b batch_size_was=32") ;;
    *) echo "batch-size-resume: 4 batches of 32 resumed with --batch-size $b: expected batch" \
           "$want, the trace says: ${res:-no resume event}"
       bad=1 ;;
    esac
done
[ "$bad" -eq 0 ] && echo "batch-size-resume: a mid-epoch checkpoint of 32-image batches resumes at the same image with 64, 16 and 32"
exit $bad
