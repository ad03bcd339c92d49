#!/bin/sh
# ckpt_faults.sh — what solution 10 does with a log directory it must not or cannot use, run for
# real under mpirun -n 2: each case checks the one line printed, the exit status, that no batch
# ran when the fault is known up front, and that no file saved earlier changed.
# Usage: ckpt_faults.sh PROGRAM (from the repository root). Env: MPIRUN. Exit 0 when all hold.
set -u
prog=${1:-./solution10}
mpirun=${MPIRUN:-mpirun --oversubscribe --allow-run-as-root}
work=$(mktemp -d /tmp/hvdlab-ckptfaults-XXXXXX)
mnt=""
cleanup() { [ -n "$mnt" ] && umount "$mnt" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
bad=0
pass=0
flags="--epochs 1 --train-subset 256 --test-subset 256 --batch-size 32 --model wrn-10-1
       --use-checkpointing"
run() { # output file, flags...
    out=$1; shift
    OMP_NUM_THREADS=1 timeout 60 $mpirun -n 2 "$prog" $flags "$@" >"$out" 2>&1
}
fail() { echo "ckpt-faults: $*"; bad=1; }
# expect CASE OUT PATTERN: non-zero exit (in $rc), the pattern on an error line, no batch run
expect() {
    if [ "$rc" -eq 0 ]; then fail "$1: exit 0"; return; fi
    if ! grep -q "^hvdlab: error: .*$3" "$2"; then
        fail "$1: no line matching '$3':"; sed 's/^/    /' "$2" | head -5; return
    fi
    if grep -q '^Epoch 1/' "$2"; then fail "$1: training started before the fault was found"; return; fi
    pass=$((pass + 1))
}

# 1. another optimizer's checkpoints: stop, name file and setting, leave them byte for byte
run "$work/a.out" --log-dir "$work/a" || fail "setup run failed"
cp "$work/a/checkpoint-1.ckpt" "$work/keep.ckpt"
run "$work/b.out" --log-dir "$work/a" --optimizer novograd; rc=$?
expect "other optimizer" "$work/b.out" \
    "checkpoint-1.ckpt: checkpoint holds sgd optimizer state, but this run uses novograd; use another --log-dir, or --restart which moves"
cmp -s "$work/keep.ckpt" "$work/a/checkpoint-1.ckpt" || fail "other optimizer: the old checkpoint changed"
# ... another model likewise
run "$work/c.out" --log-dir "$work/a" --model wrn-16-1; rc=$?
expect "other model" "$work/c.out" "checkpoint of model wrn-10-1 (depth 10, width 1), but this run builds wrn-16-1"
# 2. --restart moves them into a new dated subfolder and trains afresh. The folders of the next
# 120 s are taken by earlier restarts (two in one second, a clock stepped back): it takes
# restart-<stamp>-2, and every file of theirs stays as it was
now=$(date +%s)
for s in $(seq 0 119); do
    d="$work/a/restart-$(date -d "@$((now + s))" +%Y%m%d-%H%M%S)"
    mkdir "$d" && echo "earlier $s" >"$d/checkpoint-1.ckpt"
done
run "$work/d.out" --log-dir "$work/a" --optimizer novograd --restart ||
    fail "--restart: the run failed"
sub=$(sed -n 's/^hvdlab: --restart: 1 file(s) of the earlier run moved to \(.*-2\)$/\1/p' \
    "$work/d.out")
if [ -z "$sub" ] || ! cmp -s "$sub/checkpoint-1.ckpt" "$work/keep.ckpt" ||
   [ ! -e "$work/a/checkpoint-1.ckpt" ]; then
    fail "--restart: the old checkpoint is not in restart-*-2/ or no new one was written"
    grep "restart" "$work/d.out" | sed 's/^/    /'
else pass=$((pass + 1)); fi
for s in $(seq 0 119); do
    d="$work/a/restart-$(date -d "@$((now + s))" +%Y%m%d-%H%M%S)"
    [ "$(cat "$d/checkpoint-1.ckpt")" = "earlier $s" ] ||
        { fail "--restart: an earlier restart's $d/checkpoint-1.ckpt changed"; break; }
done
# 3. every checkpoint damaged: renamed aside (the bytes kept), the run stops; the .damaged an
# earlier run set aside stays byte for byte, this one is .damaged.2
mkdir -p "$work/e"
head -c 300 "$work/keep.ckpt" >"$work/e/checkpoint-1.ckpt"
head -c 200 "$work/keep.ckpt" >"$work/e/checkpoint-1.ckpt.damaged"
cp "$work/e/checkpoint-1.ckpt" "$work/e1.ckpt"
cp "$work/e/checkpoint-1.ckpt.damaged" "$work/e0.ckpt"
run "$work/e.out" --log-dir "$work/e"; rc=$?
expect "all damaged" "$work/e.out" "every checkpoint in it is damaged (renamed to \*.damaged)"
grep -q "warning: .*checkpoint-1.ckpt: truncated .*renamed to .*checkpoint-1.ckpt.damaged.2, not" \
    "$work/e.out" || fail "all damaged: no rename warning naming .damaged.2"
cmp -s "$work/e/checkpoint-1.ckpt.damaged.2" "$work/e1.ckpt" ||
    fail "all damaged: the damaged file is gone"
cmp -s "$work/e/checkpoint-1.ckpt.damaged" "$work/e0.ckpt" ||
    fail "all damaged: the earlier .damaged changed"
# 4. temp files of a killed writer are removed at start
mkdir -p "$work/t" && : >"$work/t/.checkpoint-1.ckpt.tmp-AbCdEf"
run "$work/t.out" --log-dir "$work/t" || fail "temp files: the run failed"
if ls -a "$work/t" | grep -q '\.tmp-'; then fail "temp files: still there"; else pass=$((pass + 1)); fi
# 5. a log dir that cannot be created (a file in the way), before the first batch
: >"$work/file"
run "$work/f.out" --log-dir "$work/file/logs"; rc=$?
expect "not a directory" "$work/f.out" "cannot create checkpoint directory: .*is not a directory"
# 6. subsets larger than the data
run "$work/s.out" --log-dir "$work/s" --train-subset 60001; rc=$?
expect "train subset" "$work/s.out" "--train-subset 60001: the data hold only 60000 training images"
# 7. a diverging run saves no checkpoint full of NaN
run "$work/n.out" --log-dir "$work/n" --base-lr 1000 --warmup-epochs 0 --epochs 2; rc=$?
if [ "$rc" -ne 0 ] && grep -Eq "checkpoint-1.ckpt: not saved: .*(nan|inf)|non-finite|diverged" "$work/n.out" &&
   ! ls "$work/n" 2>/dev/null | grep -q '^checkpoint-'; then pass=$((pass + 1))
else fail "divergence: a checkpoint was written or no line said why"; sed 's/^/    /' "$work/n.out" | grep hvdlab | head -3; fi
# 7b. ... also when the last update of the run is the one that diverges (one step: no gradient
# follows that the divergence check would read): the evaluation after it stops the run, with and
# without checkpoints, before any test score or checkpoint
for ck in --use-checkpointing ""; do
    OMP_NUM_THREADS=1 timeout 60 $mpirun -n 2 "$prog" --epochs 1 --train-subset 256 \
        --test-subset 256 --batch-size 128 --model wrn-10-1 --base-lr 1e30 --warmup-epochs 0 \
        --log-dir "$work/l" $ck >"$work/l.out" 2>&1; rc=$?
    if [ "$rc" -ne 0 ] &&
       grep -q "^hvdlab: error: .*training diverged at epoch 1, step 1 of 1: the evaluation after it gives a loss of NaN" "$work/l.out" &&
       ! grep -q "^Test loss" "$work/l.out" && ! ls "$work/l" 2>/dev/null | grep -q '^checkpoint-'; then
        pass=$((pass + 1))
    else
        fail "last-step divergence ${ck:-without checkpoints}: exit $rc, a test score, a checkpoint or no line"
        grep -E "hvdlab|Test loss" "$work/l.out" | sed 's/^/    /' | head -3
    fi
done
# 10. a log dir a live run uses: a second run stops before its first batch (and moves nothing
# with --restart); the live run's checkpoints stay; once it has ended (stopped by a signal) the
# dir is free
OMP_NUM_THREADS=1 timeout 100 $mpirun -n 2 "$prog" $flags --epochs 200 --train-subset 1024 \
    --log-dir "$work/live" >"$work/live.out" 2>&1 &
live=$!
for i in $(seq 1 300); do [ -e "$work/live/checkpoint-1.ckpt" ] && break; sleep 0.1; done
[ -e "$work/live/checkpoint-1.ckpt" ] || fail "live run: no checkpoint-1.ckpt after 30 s"
run "$work/x.out" --log-dir "$work/live"; rc=$?
expect "live run" "$work/x.out" "live: another run is using this --log-dir (pid [0-9]* on .*, since "
run "$work/x.out" --log-dir "$work/live" --restart; rc=$?
expect "live run, --restart" "$work/x.out" "another run is using this --log-dir"
if ls "$work/live" | grep -q '^restart-' || [ ! -e "$work/live/checkpoint-1.ckpt" ]; then
    fail "live run, --restart: the live run's checkpoints were moved"
fi
kill "$live" # timeout hands the SIGTERM to mpirun, mpirun to the ranks: they save and stop
wait "$live"
run "$work/y.out" --log-dir "$work/live" --restart && pass=$((pass + 1)) ||
    { fail "live run ended: the log dir is still taken"; grep hvdlab "$work/y.out" | head -3; }
# 8-9. read-only and full file systems (a small tmpfs; needs root, else skipped)
mnt="$work/mnt"; mkdir -p "$mnt"
if mount -t tmpfs -o size=64k,ro tmpfs "$mnt" 2>/dev/null; then
    run "$work/r.out" --log-dir "$mnt/logs"; rc=$?
    expect "read-only" "$work/r.out" "cannot create checkpoint directory: Read-only file system"
    umount "$mnt"
    mount -t tmpfs -o size=64k tmpfs "$mnt"
    run "$work/w.out" --log-dir "$mnt"; rc=$?
    expect "no room" "$work/w.out" "bytes free, a checkpoint of this model takes"
    umount "$mnt"
else
    echo "ckpt-faults: read-only and full log dirs skipped (mounting a tmpfs needs root)"
fi
mnt=""
[ "$bad" -eq 0 ] && echo "ckpt-faults: $pass log-dir faults end as they should, nothing saved was changed"
exit $bad
