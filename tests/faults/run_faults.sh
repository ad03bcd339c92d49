#!/bin/sh
# run_faults.sh — tries the faults of notebooks-md/appendix-faults.md on solution 10 for real
# (2 ranks, small subsets, every run under a timeout), judges each from what the program printed,
# its exit status, the time it took to exit and the checkpoints it left, and prints the table.
#
# Usage: sh tests/faults/run_faults.sh [--quick] [--write-doc] [--only "N ..."]
#   --quick      only the rows marked quick (they end in seconds even where the kit still fails)
#   --write-doc  also put the table into notebooks-md/appendix-faults.md between its markers
#   --only       only these rows (numbers as in the table: 1 2 2b 3 4 5 5b 6 7a 7b 7c 8 8b 9 10
#                11 12 13 14 15)
# Env: BUILD (build), MPIRUN (mpirun with its flags), FAULTS_REQUIRE (rows that must hold: the
#      exit status is 1 when one of them that ran does not; default: all), TIMEOUT_SCALE (see
#      SCALE below), FAULTS_KEEP=1 keeps
#      the scratch directory.
# Needs: make solution10 and build/tests/progs/prog_fault_ops (make test-faults builds both),
# Fashion-MNIST (make setup).
set -u
cd "$(dirname "$0")/../.." || exit 2
BUILD=${BUILD:-build}
if [ -z "${MPIRUN:-}" ]; then
    MPIRUN="mpirun --oversubscribe"
    [ "$(id -u)" = 0 ] && MPIRUN="$MPIRUN --allow-run-as-root"
fi
REQUIRE=${FAULTS_REQUIRE:-1 2 2b 3 4 5 5b 6 7a 7b 7c 8 8b 9 10 11 12 13 14 15}
PROG=$(pwd)/$BUILD/solutions/step10
OPS=$(pwd)/$BUILD/tests/progs/prog_fault_ops
quick=0 write_doc=0 only=""
while [ $# -gt 0 ]; do
    case $1 in
    --quick) quick=1 ;;
    --write-doc) write_doc=1 ;;
    --only) shift; only=$1 ;;
    *) echo "usage: $0 [--quick] [--write-doc] [--only \"N ...\"]" >&2; exit 2 ;;
    esac
    shift
done
for f in "$PROG" "$OPS"; do
    [ -x "$f" ] || { echo "run_faults: $f is not built (make test-faults builds it)" >&2; exit 2; }
done
W=$(mktemp -d /tmp/hvdlab-faults-XXXXXX)
[ "${FAULTS_KEEP:-0}" = 1 ] || trap 'rm -rf "$W"' EXIT
SMALL="--train-subset 256 --test-subset 128 --batch-size 32 --val-batch-size 64"
LONG="--train-subset 4096 --test-subset 128 --batch-size 32 --val-batch-size 64 --epochs 40"

# Every time limit below (each run's timeout, row 5's "within 10 s") was set on a quiet machine:
# it is scaled by the load when the script starts, as tools/load_timeout.sh scales the stages of
# make test (the 1-minute load average per core, rounded up, 1 to 8; TIMEOUT_SCALE=N fixes it).
SCALE=$(sh tools/load_timeout.sh --factor)
LOAD0=$(cut -d' ' -f1 /proc/loadavg)
[ "$SCALE" -gt 1 ] && echo "run_faults: load $LOAD0 on $(nproc) core(s): time limits x$SCALE" >&2

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

# run NAME SECONDS ARGS...: $MPIRUN ARGS under a timeout; NAME.out, RC, SECS.
run() {
    name=$1 t=$2
    shift 2
    t0=$(now)
    timeout -k 3 "$((t * SCALE))" $MPIRUN "$@" >"$W/$name.out" 2>&1
    RC=$?
    SECS=$(since "$t0")
}

# start NAME SECONDS ARGS...: as run, in the background; wait_for NAME PATTERN then finish NAME.
# start_cmd NAME SECONDS COMMAND...: the same for a command other than $MPIRUN (./hvdrun).
start() {
    name=$1 t=$2
    shift 2
    start_cmd "$name" "$t" $MPIRUN "$@"
}
start_cmd() {
    name=$1 t=$2
    shift 2
    rm -f "$W/$name.rc"
    (
        timeout -k 3 "$((t * SCALE))" "$@" >"$W/$name.out" 2>&1 &
        echo $! >"$W/$name.job" # timeout's pid: a signal to it is passed on to mpirun
        wait $! 2>/dev/null # no "Killed" from the shell where a row kills the launcher (14)
        echo $? >"$W/$name.rc"
    ) &
    while [ ! -s "$W/$name.job" ]; do sleep 0.05; done
}
wait_for() { # NAME PATTERN: 0 once the output holds PATTERN, 1 if the job ended first
    while :; do
        grep -q -- "$2" "$W/$1.out" 2>/dev/null && return 0
        [ -f "$W/$1.rc" ] && return 1
        sleep 0.1
    done
}
finish() { # NAME T0: waits for the job; RC, SECS from T0
    while [ ! -f "$W/$1.rc" ]; do sleep 0.1; done
    RC=$(cat "$W/$1.rc")
    SECS=$(since "$2")
}

# A launcher for one app context that leaves its pid in NAME.pid: the program execs, so the pid
# is the rank's.
rank1() {
    printf '#!/bin/sh\np=$1\nshift\necho $$ >"$p"\nexec "$@"\n' >"$W/rank1.sh"
    chmod +x "$W/rank1.sh"
    echo "$W/rank1.sh $W/$1.pid $PROG"
}

# The first error line without its prefix, cut, with | escaped for the table.
err_line() {
    grep -m1 -o 'hvdlab: error: .*' "$W/$1.out" | sed -E 's/^hvdlab: error: (\[rank [0-9]+\] )?//' |
        sed -E "s#$W/##g; s/\.tmp-[A-Za-z0-9]{6}/.tmp-XXXXXX/g" |
        awk '{ print (length($0) > 240 ? substr($0, 1, 240) "…" : $0) }' | sed 's/|/\\|/g'
}
err_lines() { grep -c 'hvdlab: error:' "$W/$1.out"; }
status() { # the exit status in words
    case $RC in
    0) echo "exit 0" ;;
    124 | 137) echo "still running: stopped by the script's timeout" ;;
    *) echo "exit $RC" ;;
    esac
}
stopped_with_line() { # NAME: non-zero exit, not the timeout, and the kit's one-line error
    [ "$RC" != 0 ] && [ "$RC" != 124 ] && [ "$RC" != 137 ] && [ "$(err_lines "$1")" -ge 1 ]
}
sums() { (cd "$1" && sha256sum ./* 2>/dev/null) | sort; }

ROWS=""
# row ID QUICK HOLDS "fault" "what the kit does" "time" "lost"
row() {
    mark=""
    [ "$2" = 1 ] && mark=" (q)"
    verdict="not yet"
    [ "$3" = 1 ] && verdict="yes"
    ROWS="$ROWS| $1$mark | $4 | $5 | $6 | $7 | $verdict |
"
    echo "run_faults: $1: $verdict ($6)" >&2
    [ "$3" = 1 ] && return
    # why the run ended: the last lines of the row's run (its own name, else the last started)
    out=$W/f$1.out
    [ -f "$out" ] || out=$W/$name.out
    if [ -f "$out" ]; then
        echo "run_faults: $1: the last lines of ${out##*/} (exit status $RC):" >&2
        tr '\r' '\n' <"$out" | grep -v '^[[:space:]]*$' | tail -n 8 | cut -c1-300 |
            sed "s#$W/##g; s/^/    /" >&2
    fi
    for r in $REQUIRE; do [ "$r" = "$1" ] && FAILED="$FAILED $1"; done
}
FAILED=""

wanted() { # ID QUICK
    if [ -n "$only" ]; then
        for o in $only; do [ "$o" = "$1" ] && return 0; done
        return 1
    fi
    [ $quick = 0 ] || [ "$2" = 1 ]
}

# 1. Valid SGD checkpoints, restart with --optimizer novograd.
f1() {
    d=$W/f1
    mkdir -p "$d"
    run f1a 60 -n 2 "$PROG" $SMALL --epochs 2 --use-checkpointing --log-dir "$d"
    before=$(sums "$d")
    run f1 60 -n 2 "$PROG" $SMALL --epochs 3 --use-checkpointing --log-dir "$d" --optimizer novograd
    after_old=$(cd "$d" && sha256sum ./checkpoint-1.ckpt ./checkpoint-2.ckpt 2>/dev/null | sort)
    intact=0
    [ -n "$before" ] && [ "$(echo "$before" | grep -E 'checkpoint-[12]\.ckpt')" = "$after_old" ] && intact=1
    if stopped_with_line f1; then does="stops: $(err_line f1)"
    else does="$(grep -c 'skipped' "$W/f1.out") warning(s) 'skipped', trains from scratch, $(status)"; fi
    lost="nothing"
    [ $intact = 1 ] || lost="checkpoint-1 and -2 of the earlier run overwritten"
    ok=0
    stopped_with_line f1 && [ $intact = 1 ] && ok=1
    row 1 1 $ok "restart with \`--optimizer novograd\` over SGD checkpoints" "$does" "$SECS" "$lost"
}

# 2. Resume: 1 epoch then 1 more, against 2 uninterrupted (dropout on, the default).
f2() {
    a=$W/f2a b=$W/f2b
    mkdir -p "$a" "$b"
    run f2a 60 -n 2 "$PROG" $SMALL --epochs 2 --use-checkpointing --log-dir "$a"
    run f2b 60 -n 2 "$PROG" $SMALL --epochs 1 --use-checkpointing --log-dir "$b"
    run f2c 60 -n 2 "$PROG" $SMALL --epochs 2 --use-checkpointing --log-dir "$b"
    if cmp -s "$a/checkpoint-2.ckpt" "$b/checkpoint-2.ckpt"; then
        ok=1 does="resumes; checkpoint-2 is byte-identical to the uninterrupted run's"
    else
        ok=0 does="resumes, but checkpoint-2 differs from the uninterrupted run's ($(status))"
    fi
    lost="nothing"
    [ $ok = 1 ] || lost="exactness: the resumed run trains other weights"
    row 2 1 $ok "resume after epoch 1, compared with an uninterrupted run" "$does" "$SECS" "$lost"
}

# 2b. Resume with early stopping on: every epoch is above the target, patience 3. Uninterrupted:
# stops after epoch 3; stopped after epoch 2 and resumed, it must stop after epoch 3 too (the
# count of epochs above the target is in the checkpoint), with the same checkpoint-3 bytes.
f2b() {
    a=$W/f2ba b=$W/f2bb
    mkdir -p "$a" "$b"
    es="--target-accuracy 0.01 --patience 3 --use-checkpointing"
    run f2ba 60 -n 2 "$PROG" $SMALL --epochs 6 $es --log-dir "$a"
    run f2bb 60 -n 2 "$PROG" $SMALL --epochs 2 $es --log-dir "$b"
    run f2bc 60 -n 2 "$PROG" $SMALL --epochs 6 $es --log-dir "$b"
    whole=$(grep -o 'Early stopping after epoch [0-9]*' "$W/f2ba.out")
    resumed=$(grep -o 'Early stopping after epoch [0-9]*' "$W/f2bc.out")
    ok=0
    if [ -n "$whole" ] && [ "$whole" = "$resumed" ] && [ ! -e "$b/checkpoint-4.ckpt" ] &&
        cmp -s "$a/checkpoint-3.ckpt" "$b/checkpoint-3.ckpt"; then
        ok=1 does="resumes the count: both runs print '$whole', checkpoint-3 byte-identical"
    else
        does="the uninterrupted run: '${whole:-no early stop}'; the resumed one: '${resumed:-no early stop}' ($(status))"
    fi
    lost="nothing"
    [ $ok = 1 ] || lost="the early-stop count: the resumed run trains on"
    row 2b 1 $ok "resume with early stopping (\`--target-accuracy 0.01 --patience 3\`) after epoch 2" "$does" "$SECS" "$lost"
}

# 3. HVD_CHECK_COLLECTIVES=1 on rank 0 only.
f3() {
    run f3 12 -n 1 env HVD_CHECK_COLLECTIVES=1 "$PROG" $SMALL --epochs 1 : -n 1 "$PROG" $SMALL --epochs 1
    ok=0
    if stopped_with_line f3 && grep -q 'HVD_CHECK_COLLECTIVES' "$W/f3.out"; then
        ok=1 does="stops: $(err_line f3)"
    elif [ "$RC" = 0 ] && grep -q 'HVD_CHECK_COLLECTIVES' "$W/f3.out"; then
        ok=1 does="adopts rank 0's value: $(grep -m1 HVD_CHECK_COLLECTIVES "$W/f3.out" | cut -c1-150)"
    elif [ "$RC" = 124 ] || [ "$RC" = 137 ]; then
        does="hangs silently ($(status))"
    else does="$(status): $(err_line f3)"; fi
    row 3 0 $ok "\`HVD_CHECK_COLLECTIVES=1\` on rank 0 only" "$does" "$SECS" "nothing"
}

# 4. Another (valid) file on one rank: MPMD launch with two --data-dir.
f4() {
    src=$(sed -n 's/^Model.*Data from \(.*\): [0-9]* training.*/\1/p' "$W/f1a.out" 2>/dev/null)
    [ -n "$src" ] || src=/usr/share/datasets/fashion-mnist
    a=$W/f4a b=$W/f4b
    mkdir -p "$a" "$b"
    for f in "$src"/*-ubyte*; do ln -s "$f" "$a/"; ln -s "$f" "$b/"; done
    rm -f "$b"/t10k-labels-idx1-ubyte*
    python3 -c "
import gzip, sys, os
src = sys.argv[1]
p = src + '/t10k-labels-idx1-ubyte'
b = bytearray(gzip.open(p + '.gz').read() if os.path.exists(p + '.gz') else open(p, 'rb').read())
b[8] = (b[8] + 1) % 10
open(sys.argv[2] + '/t10k-labels-idx1-ubyte', 'wb').write(b)" "$src" "$b"
    run f4 30 -n 1 "$PROG" $SMALL --epochs 1 --data-dir "$a" : -n 1 "$PROG" $SMALL --epochs 1 --data-dir "$b"
    ok=0
    if stopped_with_line f4 && grep -q 'hvdlab: error:.*t10k-labels' "$W/f4.out"; then
        ok=1 does="stops: $(err_line f4)"
    elif grep -q MPI_ERR_TRUNCATE "$W/f4.out"; then does="raw MPI_ERR_TRUNCATE from Open MPI ($(status))"
    else does="$(status) $(err_line f4)"; fi
    row 4 1 $ok "one rank's test labels differ by one label (\`--data-dir\` per rank)" "$does" "$SECS" "nothing"
}

# 5. kill -9 of rank 1 in epoch 2: rank 0's last line names it, how, where, and the resume.
# 5b. Rank 2 of 3 crashes (SIGSEGV): both survivors say so (rank 1 hears it through rank 0).
under_10s() { awk -v s="${SECS% s}" -v k="$SCALE" 'BEGIN { exit !(s < 10 * k) }'; }
f5() {
    d=$W/f5
    mkdir -p "$d"
    start f5 60 -n 1 "$PROG" $LONG --use-checkpointing --log-dir "$d" : -n 1 $(rank1 f5) $LONG \
        --use-checkpointing --log-dir "$d"
    does="did not reach epoch 2" ok=0 SECS="-"
    if wait_for f5 'Epoch 2/'; then
        t0=$(now)
        kill -9 "$(cat "$W/f5.pid")"
        finish f5 "$t0"
        last=$(grep -o 'hvdlab: .*' "$W/f5.out" | tail -n1)
        if echo "$last" | grep -q 'rank 1 (pid [0-9]* on .*) died: vanished without a word' &&
            echo "$last" | grep -q 'epoch 2 after batch' &&
            echo "$last" | grep -q -- '; run the same command again to resume after epoch 1 from' &&
            under_10s; then
            ok=1 does="$(echo "$last" | sed -E 's/^hvdlab: (error|warning): //' | sed "s#$W/##g" |
                cut -c1-400 | sed 's/|/\\|/g')"
        else
            does="only mpirun's report: $(grep -m1 -o 'exited on signal [0-9]*' "$W/f5.out" || status)"
        fi
    else finish f5 "$(now)"; fi
    lost="the epoch in progress (checkpoint-1 kept)"
    [ -s "$d/checkpoint-1.ckpt" ] || lost="checkpoint-1 missing"
    row 5 1 $ok "\`kill -9\` of rank 1 in epoch 2" "$does" "$SECS" "$lost"
}
f5b() {
    start f5b 60 -n 2 "$PROG" $LONG : -n 1 $(rank1 f5b) $LONG
    does="did not reach epoch 1" ok=0 SECS="-"
    if wait_for f5b 'Epoch 1/'; then
        sleep 0.5
        t0=$(now)
        kill -SEGV "$(cat "$W/f5b.pid")"
        finish f5b "$t0"
        named=$(grep -c 'rank 2 (pid [0-9]* on .*) died: killed by SIGSEGV' "$W/f5b.out")
        if [ "$named" = 2 ] && under_10s; then
            ok=1 does="ranks 0 and 1: $(grep -m1 -o 'rank 2 (pid.*' "$W/f5b.out" | cut -c1-200 |
                sed 's/|/\\|/g')"
        else
            does="$named of 2 survivors name it: $(grep -m1 -o 'exited on signal [0-9]*' "$W/f5b.out" || status)"
        fi
    else finish f5b "$(now)"; fi
    row 5b 1 $ok "rank 2 of 3 crashes (\`kill -SEGV\`) in epoch 1" "$does" "$SECS" "the epoch in progress"
}

# 6. Divergence: --base-lr 1000 --warmup-epochs 0.
f6() {
    d=$W/f6
    mkdir -p "$d"
    run f6 60 -n 2 "$PROG" $SMALL --epochs 2 --base-lr 1000 --warmup-epochs 0 --use-checkpointing \
        --log-dir "$d"
    n=$(ls "$d" | grep -c 'ckpt$')
    ok=0
    if stopped_with_line f6 && grep -q 'training diverged' "$W/f6.out"; then
        ok=1 does="stops on every rank: $(err_line f6)"
    else does="trains on to $(grep -m1 -o 'Test loss: [^ ]*' "$W/f6.out" || echo 'the end'), $(status)"; fi
    lost="nothing (no checkpoint written)"
    [ "$n" = 0 ] || lost="$n checkpoint(s) written after the NaN"
    [ "$n" = 0 ] || ok=0
    row 6 1 $ok "\`--base-lr 1000 --warmup-epochs 0\`" "$does" "$SECS" "$lost"
}

# 7a. A log dir where no file can be created (root may write anywhere else); 7b. a subset larger
# than the data.
f7a() {
    run f7a 60 -n 2 "$PROG" $SMALL --epochs 1 --use-checkpointing --log-dir /proc/self
    ok=0 when="after the first epoch's compute"
    grep -q '^1/' "$W/f7a.out" || when="before the first batch"
    if stopped_with_line f7a; then does="stops $when: $(err_line f7a)"
    else does="$(status)"; fi
    lost="nothing"
    [ "$when" = "before the first batch" ] || lost="the first epoch's compute"
    stopped_with_line f7a && [ "$when" = "before the first batch" ] && ok=1
    row 7a 1 $ok "\`--log-dir /proc/self\` (exists, no file can be created)" "$does" "$SECS" "$lost"
}
f7b() {
    run f7b 8 -n 2 "$PROG" --train-subset 70000 --test-subset 128 --batch-size 256 --epochs 1
    ok=0
    if stopped_with_line f7b; then ok=1 does="stops: $(err_line f7b)"
    elif grep -q -- '--train-subset' "$W/f7b.out"; then
        ok=1 does="announces: $(grep -m1 -- '--train-subset' "$W/f7b.out" | cut -c1-150)"
    else does="clamps to $(sed -n 's/.*: \([0-9]*\) training.*/\1/p' "$W/f7b.out") silently, $(status)"; fi
    row 7b 0 $ok "\`--train-subset 70000\` (the data has 60000)" "$does" "$SECS" "nothing"
}

# 7c. A second job started with the --log-dir of a job still training (its checkpoints are where
# the second would resume from and save to); the first is then stopped by a SIGTERM to its mpirun.
f7c() {
    d=$W/f7c
    mkdir -p "$d"
    start f7c-live 60 -n 2 "$PROG" $LONG --use-checkpointing --log-dir "$d"
    does="the live run did not reach epoch 2" ok=0 SECS="-" lost="-"
    if wait_for f7c-live 'Epoch 2/'; then
        kept=$(sha256sum "$d/checkpoint-1.ckpt")
        run f7c 30 -n 2 "$PROG" $LONG --use-checkpointing --log-dir "$d"
        took=$SECS
        when="before the first batch"
        grep -q '^Epoch 1/' "$W/f7c.out" && when="after it trained"
        if stopped_with_line f7c; then does="stops $when: $(err_line f7c)"
        else does="$(status), $when"; fi
        lost="nothing"
        [ "$(sha256sum "$d/checkpoint-1.ckpt" 2>/dev/null)" = "$kept" ] ||
            lost="the live run's checkpoint-1 changed"
        stopped_with_line f7c && [ "$when" = "before the first batch" ] && [ "$lost" = nothing ] &&
            ok=1
        mpi=$(pgrep -P "$(cat "$W/f7c-live.job")" | head -1) # as in row 10
        kill -TERM "${mpi:-$(cat "$W/f7c-live.job")}"
    fi
    finish f7c-live "$(now)"
    row 7c 0 $ok "a second run with the \`--log-dir\` of a run still training" "$does" "${took:--}" \
        "$lost"
}

# 8. Rank 1 frozen (SIGSTOP) in epoch 1, stall inspector at 2 s, shutdown at 6 s.
f8() {
    start f8 15 -n 1 env HVD_STALL_CHECK_TIME_SECONDS=2 HVD_STALL_SHUTDOWN_TIME_SECONDS=6 "$PROG" $LONG \
        : -n 1 env HVD_STALL_CHECK_TIME_SECONDS=2 HVD_STALL_SHUTDOWN_TIME_SECONDS=6 $(rank1 f8) $LONG
    does="did not reach epoch 1" ok=0 SECS="-"
    if wait_for f8 'Epoch 1/'; then
        t0=$(now)
        kill -STOP "$(cat "$W/f8.pid")"
        finish f8 "$t0"
        kill -9 "$(cat "$W/f8.pid")" 2>/dev/null
        warned=$(grep -i -m1 'stall' "$W/f8.out" | cut -c1-150 | sed 's/|/\\|/g')
        if [ -n "$warned" ] && [ "$RC" != 124 ] && [ "$RC" != 137 ] && [ "$RC" != 0 ]; then
            ok=1 does="warns, then stops: $warned"
        elif [ -n "$warned" ]; then does="warns ($warned), $(status)"
        else does="waits silently ($(status))"; fi
    else finish f8 "$(now)"; fi
    row 8 0 $ok "rank 1 frozen (\`kill -STOP\`), \`HVD_STALL_CHECK_TIME_SECONDS=2\`, \`HVD_STALL_SHUTDOWN_TIME_SECONDS=6\`" \
        "$does" "$SECS" "the epoch in progress"
}

# 8b. Rank 1 frozen inside a collective every rank has entered (a 64 MiB broadcast, looped):
# the entry handshake is over, the progress check must name it. Check at 1 s, shutdown at 3 s.
f8b() {
    e="env HVD_STALL_CHECK_TIME_SECONDS=1 HVD_STALL_SHUTDOWN_TIME_SECONDS=3"
    printf '#!/bin/sh\necho $$ >"%s"\nexec "$@"\n' "$W/f8b.pid" >"$W/f8b.sh"
    chmod +x "$W/f8b.sh"
    start f8b 20 -n 1 $e "$OPS" loop : -n 1 $e "$W/f8b.sh" "$OPS" loop
    does="did not start looping" ok=0 SECS="-"
    if wait_for f8b 'prog_fault_ops: looping'; then
        sleep 0.5
        t0=$(now)
        kill -STOP "$(cat "$W/f8b.pid")"
        finish f8b "$t0"
        kill -9 "$(cat "$W/f8b.pid")" 2>/dev/null
        line=$(grep -m1 -o 'hvdlab: error: .*entered by every rank.*' "$W/f8b.out")
        if echo "$line" | grep -q 'not answering: rank 1 (pid [0-9]* on [^,]*, stopped' &&
            grep -q 'hvdlab: warning: .*after 1 s (HVD_STALL_CHECK_TIME_SECONDS): not answering: rank 1' "$W/f8b.out" &&
            [ "$RC" != 124 ] && [ "$RC" != 137 ] && [ "$RC" != 0 ]; then
            ok=1 does="warns at 1 s, then stops: $(echo "$line" | cut -c16-300 | sed 's/|/\\|/g')"
        elif grep -q 'missing ranks: 1 (not arrived)' "$W/f8b.out"; then
            does="stopped between two calls, not inside one: run it again ($(status))"
        else does="waits silently ($(status))"; fi
    else finish f8b "$(now)"; fi
    row 8b 1 $ok "rank 1 frozen (\`kill -STOP\`) inside a broadcast every rank entered, \`HVD_STALL_CHECK_TIME_SECONDS=1\`, \`HVD_STALL_SHUTDOWN_TIME_SECONDS=3\`" \
        "$does" "$SECS" "nothing (no training)"
}

# 9. SUM on rank 0 against AVERAGE on rank 1, collective checks on.
f9() {
    run f9 20 -n 2 env HVD_CHECK_COLLECTIVES=1 "$OPS"
    ok=0
    if [ "$RC" != 0 ] && [ "$RC" != 124 ] && grep -q 'hvdlab: error:' "$W/f9.out"; then
        ok=1 does="stops: $(grep -m1 -o 'hvdlab: error: .*' "$W/f9.out" | cut -c16-165)"
    else does="passes the check: $(grep -m1 -o 'rank 0 got .*' "$W/f9.out"), $(status)"; fi
    row 9 1 $ok "allreduce with SUM on rank 0, AVERAGE on rank 1, \`HVD_CHECK_COLLECTIVES=1\`" \
        "$does" "$SECS" "nothing"
}


# 10. SIGTERM to mpirun once epoch 2 has begun. Open MPI's mpirun passes it on to the ranks about
# a second later (measured: they stop some 50 steps of 1.3 s epochs after it, against 3-5 for a
# SIGTERM to the ranks themselves), so the stop may fall in epoch 3. mpirun then gives the ranks
# odls_base_sigkill_timeout (1 s) before its SIGKILL; a loaded machine's steps take longer than
# that (0.7 s a step at load 25 on 2 cores: killed before a word), so it is scaled as the limits.
f10() {
    d=$W/f10
    mkdir -p "$d"
    start f10 60 --mca odls_base_sigkill_timeout "$SCALE" -n 2 "$PROG" $LONG --use-checkpointing --log-dir "$d"
    does="did not reach epoch 2" ok=0 SECS="-" lost="-"
    if wait_for f10 'Epoch 2/'; then
        before=$(sums "$d")
        t0=$(now)
        # To mpirun itself, once: a signal to timeout would also reach mpirun through timeout's
        # process group, and a second SIGTERM makes mpirun abort at once, before the ranks speak.
        mpi=$(pgrep -P "$(cat "$W/f10.job")" | head -1)
        kill -TERM "${mpi:-$(cat "$W/f10.job")}"
        finish f10 "$t0"
        after=$(sums "$d")
        lines=$(grep -c 'hvdlab:' "$W/f10.out")
        saved=0
        [ "$before" != "$after" ] && saved=1
        lost="the epoch in progress"
        [ $saved = 1 ] && [ "$lines" -ge 1 ] && lost="nothing (saved at the stop)"
        if [ "$lines" -ge 1 ] && [ "$RC" != 0 ]; then
            does="$(grep -m1 -o 'hvdlab: .*' "$W/f10.out" | sed "s#$W/##g" | cut -c9-158), $(status)"
        else does="no message, $(status)"; fi
        [ "$lines" -ge 1 ] && [ "$RC" != 0 ] && [ $saved = 1 ] && ok=1
    else finish f10 "$(now)"; fi
    row 10 1 $ok "SIGTERM to \`mpirun\` once epoch 2 has begun" "$does" "$SECS" "$lost"
}

# 11. A checkpoint's scalars edited and its CRCs fixed up (zlib's crc32 over the header's first
# 124 bytes and over all but the last 4): last_lr NaN; then a mid-epoch copy (checkpoint-1.5)
# that claims 5 batches of 32 images on each of 1000 ranks, more than the 60000 images of an
# epoch. Offsets as in common/ckpt/ckpt_format.h; the resume block ends 4 bytes before the file.
forge() { # FILE NEWNAME FIELD=VALUE...: rewrites FILE as NEWNAME with the fields changed
    python3 -c "
import struct, sys, zlib
b = bytearray(open(sys.argv[1], 'rb').read())
rb = len(b) - 4 - 32
at = {'last_lr': (76, '<f'), 'batch': (rb + 8, '<i'), 'world_size': (rb + 12, '<i')}
for kv in sys.argv[3:]:
    k, v = kv.split('=')
    o, f = at[k]
    struct.pack_into(f, b, o, float(v) if f == '<f' else int(v))
struct.pack_into('<I', b, 124, zlib.crc32(bytes(b[:124])))
struct.pack_into('<I', b, len(b) - 4, zlib.crc32(bytes(b[:-4])))
open(sys.argv[2], 'wb').write(b)" "$@"
}
f11() {
    a=$W/f11a b=$W/f11b
    mkdir -p "$a" "$b"
    run f11a 60 -n 2 "$PROG" $SMALL --epochs 1 --use-checkpointing --log-dir "$a"
    ok=0 does="the first run wrote no checkpoint-1 ($(status))" took="$SECS"
    if [ -s "$a/checkpoint-1.ckpt" ]; then
        forge "$a/checkpoint-1.ckpt" "$b/checkpoint-1.5.ckpt" batch=5 world_size=1000
        forge "$a/checkpoint-1.ckpt" "$a/checkpoint-1.ckpt" last_lr=nan
        run f11 60 -n 2 "$PROG" $SMALL --epochs 2 --use-checkpointing --log-dir "$a"
        nan_ok=0
        stopped_with_line f11 && grep -q 'checkpoint-1.ckpt: implausible checkpoint: last_lr nan' \
            "$W/f11.out" && ! grep -q '^1/' "$W/f11.out" && nan_ok=1
        took="$SECS"
        run f11b 60 -n 2 "$PROG" $SMALL --epochs 2 --use-checkpointing --log-dir "$b"
        took="$took, $SECS"
        if [ $nan_ok = 1 ] && stopped_with_line f11b &&
            grep -q 'checkpoint-1.5.ckpt: implausible checkpoint: batch 5, world_size 1000' \
                "$W/f11b.out" && ! grep -q '^[0-9]*/' "$W/f11b.out"; then
            ok=1 does="stops, naming the file and the field: $(grep -m1 -o 'last_lr nan ([^)]*)' "$W/f11.out"
                ) (renamed aside as damaged); $(err_line f11b | sed 's/ (5 batches.*//')"
        else
            does="last_lr NaN: $(status) $(err_line f11); 1000 ranks: $(grep -m1 -o 'warning: .*' "$W/f11b.out" |
                cut -c1-150 || err_line f11b)"
        fi
    fi
    lost="nothing (the NaN file kept as \`.damaged\`)"
    [ $ok = 1 ] || lost="the resumed runs train from what no run wrote"
    row 11 1 $ok "a checkpoint's \`last_lr\` set to NaN, CRCs fixed up; a mid-epoch one that claims 1000 ranks" \
        "$does" "$took" "$lost"
}

# The processes of a job still running (zombies have ended): PIDS... -> the live ones
alive() { for p in "$@"; do [ -d "/proc/$p" ] && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null && echo "$p"; done; }
# wait_gone SECONDS PIDS...: until none of PIDS runs, at most SECONDS; 0 when none does
wait_gone() {
    n=$(($1 * 10))
    shift
    while [ $n -gt 0 ] && [ -n "$(alive "$@")" ]; do sleep 0.1; n=$((n - 1)); done
    [ -z "$(alive "$@")" ]
}

# 12. One SIGTERM to ./hvdrun while rank 1 is frozen (SIGSTOP) in epoch 1, default stall
# settings: no step ends, so the SIGUSR1 it passes on is never acted on; after HVDRUN_GRACE (3 s
# here) it must end the job, exit 143, nothing of it left. The limit, 3 + 30 s (the 30 x SCALE),
# is ten times what it takes on a loaded 2-core machine; the old ./hvdrun never ended (stopped by
# the timeout).
f12() {
    start_cmd f12 60 env HVDRUN_GRACE=3 ./hvdrun -n 1 "$PROG" $LONG : -n 1 $(rank1 f12) $LONG
    does="did not reach epoch 1" ok=0 SECS="-" lost="the epoch in progress"
    if wait_for f12 'Epoch 1/'; then
        hvd=$(pgrep -P "$(cat "$W/f12.job")" | head -1)   # timeout's child: ./hvdrun
        mpi=$(pgrep -P "$hvd" -x mpirun)
        ranks=$(pgrep -P "$mpi" | tr '\n' ' ')
        kill -STOP "$(cat "$W/f12.pid")"
        sleep 0.5
        t0=$(now)
        kill -TERM "$hvd"
        finish f12 "$t0"
        left=$(alive $mpi $ranks | tr '\n' ' ')
        if [ "$RC" = 143 ] && [ -z "$left" ] && awk -v s="${SECS% s}" -v k="$SCALE" 'BEGIN { exit !(s < 3 + 30 * k) }' &&
            grep -q 'hvdrun: the ranks did not stop within 3 s (HVDRUN_GRACE): mpirun ends the job' \
                "$W/f12.out"; then
            ok=1 does="ends the job after HVDRUN_GRACE, exit 143: $(grep -m1 -o 'hvdrun: the ranks did not stop.*' "$W/f12.out" | cut -c9-)"
        else
            does="$(status), $(tail -n 2 "$W/f12.out" | tr '\n' ' ' | cut -c1-160 | sed 's/|/\\|/g')${left:+; still running: $left}"
        fi
        kill -9 $left 2>/dev/null
    else finish f12 "$(now)"; fi
    row 12 1 $ok "one SIGTERM to \`./hvdrun\` while rank 1 is frozen (\`kill -STOP\`), \`HVDRUN_GRACE=3\`" \
        "$does" "$SECS" "$lost"
}

# The elastic launcher's job: ELASTIC NAME MIN MAX starts ./hvdrun --elastic with commits every 5
# batches in W/NAME; rank_pid NAME R: the pid of rank R of its job (0 when none), by the rank's
# OMPI_COMM_WORLD_RANK among the children of its mpirun.
elastic() {
    mkdir -p "$W/$1"
    start_cmd "$1" 60 ./hvdrun --elastic --min-np "$2" --max-np "$3" --commit-every 5 "$PROG" $LONG \
        --use-checkpointing --log-dir "$W/$1"
}
descendants() { for c in $(pgrep -P "$1"); do echo "$c"; descendants "$c"; done; }
job_pids() { # NAME: the launcher and every process under it (./hvdrun, mpirun, the ranks, ...)
    l=$(pgrep -P "$(cat "$W/$1.job")" | head -1)
    [ -z "$l" ] || { echo "$l"; descendants "$l"; }
}
rank_pid() {
    for p in $(job_pids "$1"); do
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" &&
            { echo "$p"; return; }
    done
    echo 0
}

# 13. Ranks 1 and 2 of 3 killed at once (kill -9) in epoch 1 under the elastic launcher with
# --min-np 2: one slot is left, so it must stop with its line and exit 1. The old launcher read
# mpirun's report, which names one of them, and started 2 ranks (stopped here at that start).
f13() {
    elastic f13 2 3
    does="did not reach a commit" ok=0 SECS="-"
    committed() { ls "$W/f13" | grep -q '^checkpoint-0\.[0-9]*\.ckpt$'; }
    wait_for f13 'Epoch 1/' && while ! committed && [ ! -f "$W/f13.rc" ]; do sleep 0.1; done
    if committed && [ ! -f "$W/f13.rc" ]; then
        r1=$(rank_pid f13 1) r2=$(rank_pid f13 2)
        t0=$(now)
        kill -9 "$r1" "$r2"
        # the end, or a restart (then the launcher is stopped: it would train for a minute)
        while ! grep -q 'fewer than --min-np\|elastic: starting [0-9]* rank(s) (start 2' "$W/f13.out" &&
            [ ! -f "$W/f13.rc" ]; do sleep 0.1; done
        grep -q 'elastic: starting [0-9]* rank(s) (start 2' "$W/f13.out" &&
            kill -TERM "$(pgrep -P "$(cat "$W/f13.job")" | head -1)"
        finish f13 "$t0"
        line=$(grep -m1 -o 'hvdrun: elastic: [0-9]* slot(s) left, fewer than --min-np 2.*' "$W/f13.out")
        if [ "$RC" = 1 ] && echo "$line" | grep -q '^hvdrun: elastic: 1 slot(s) left' &&
            grep -q 'hvdrun: elastic: lost 2 rank(s)' "$W/f13.out"; then
            ok=1 does="stops: $(echo "$line" | cut -c9-200)"
        else
            does="$(grep -m1 -o 'hvdrun: elastic: lost .*' "$W/f13.out" | cut -c9-120), then $(grep -o 'hvdrun: elastic: starting [0-9]* rank(s) (start 2' "$W/f13.out" | cut -c18- || echo "no restart") ($(status))"
        fi
    else finish f13 "$(now)"; fi
    row 13 1 $ok "ranks 1 and 2 of 3 killed at once (\`kill -9\`) under \`./hvdrun --elastic --min-np 2\`" \
        "$does" "$SECS" "the batches since the last commit"
}

# 14. kill -9 of the elastic launcher itself in epoch 1 (2 ranks): no handler runs; within 60 s
# (x SCALE) nothing of its job may be left running (./hvdrun, mpirun, the ranks) nor its
# temporary folder.
# (./hvdrun ends a job that does not stop HVDRUN_GRACE s after its SIGTERM, default 30, + 5 s;
# the ranks stop at their next step's end, about 3 s here with other work beside them.)
f14() {
    elastic f14 1 2
    does="did not reach epoch 1" ok=0 SECS="-"
    if wait_for f14 'Epoch 1/'; then
        pids=$(job_pids f14 | tr '\n' ' ')
        r0=$(rank_pid f14 0)
        tmp=$(tr '\0' '\n' <"/proc/$r0/environ" 2>/dev/null | sed -n 's/^HVDLAB_ELASTIC_NOTIFY=//p')
        tmp=${tmp%/notify}
        t0=$(now)
        kill -9 "$(pgrep -P "$(cat "$W/f14.job")" | head -1)"
        gone=0
        wait_gone $((60 * SCALE)) $pids && gone=1
        SECS=$(since "$t0")
        left=$(alive $pids | tr '\n' ' ')
        if [ $gone = 1 ] && [ -n "$tmp" ] && [ ! -e "$tmp" ]; then
            ok=1 does="the job stops as at a SIGTERM ($(grep -m1 -o 'hvdlab: stopped by [A-Z0-9]*' "$W/f14.out" || echo 'ended')); the temporary folder is removed"
        else
            does="${left:+still running $((60 * SCALE)) s later: $(ps -o comm= -p $(echo $left | tr ' ' ,) | sort | uniq -c | awk '{ printf "%s%s x%s", s, $2, $1; s = ", " }')}${tmp:+; }$([ -e "$tmp" ] && echo "$tmp left")"
            SECS="-"
            kill -9 $left 2>/dev/null
            rm -rf "$tmp"
        fi
    fi
    took=$SECS
    finish f14 "$(now)"
    SECS=$took
    row 14 1 $ok "\`kill -9\` of the elastic launcher (\`./hvdrun --elastic\`) in epoch 1" "$does" "$SECS" \
        "the batches since the last commit"
}

# 15. Memory sized by the data, not the flags: --val-batch-size 32768 with 256 test images on
# wrn-10-1 (sized by the flags it took 21.6 GB a rank); then batches whose activations cannot
# fit anywhere (wrn-28-10, 30000 images a rank), which must stop with one line, not meet the
# out-of-memory killer. Each rank's peak memory from /usr/bin/time (make setup installs it).
f15() {
    run f15 60 -n 2 /usr/bin/time -f 'run_faults: peak %M kB' "$PROG" --model wrn-10-1 \
        --train-subset 512 --test-subset 256 --val-batch-size 32768 --epochs 1
    took=$SECS rc15=$RC
    peaks=$(sed -n 's/^run_faults: peak \([0-9]*\) kB$/\1/p' "$W/f15.out" | sort -n)
    top=$(echo "$peaks" | tail -n1)
    run f15b 60 -n 2 "$PROG" --model wrn-28-10 --train-subset 60000 --batch-size 30000 --epochs 1
    took="$took, $SECS"
    ok=0
    mb=$(echo $peaks | awk '{ for (i = 1; i <= NF; i++) printf "%s%d MB", (i > 1 ? " and " : ""), $i / 1024 }')
    does="exit $rc15, peak memory ${mb:-not measured} a rank"
    if [ "$rc15" = 0 ] && [ "$(echo "$peaks" | grep -c .)" = 2 ] && [ "$top" -lt 1048576 ] &&
        stopped_with_line f15b && grep -q 'its activations take .* GB, more than the' "$W/f15b.out"; then
        ok=1 does="$does; the batches that cannot fit stop: $(err_line f15b)"
    else does="$does; the batches that cannot fit: $(status) $(err_line f15b)"; fi
    lost="nothing"
    [ $ok = 1 ] || lost="the run (or the host's memory)"
    row 15 1 $ok "\`--val-batch-size 32768\` with 256 test images; then 30000 images a batch on \`wrn-28-10\`" \
        "$does" "$took" "$lost"
}

for f in "1 1" "2 1" "2b 1" "3 0" "4 1" "5 1" "5b 1" "6 1" "7a 1" "7b 0" "7c 0" "8 0" "8b 1" "9 1" "10 1" "11 1" "12 1" \
    "13 1" "14 1" "15 1"; do
    set -- $f
    wanted "$1" "$2" && "f$1"
done

TABLE="Generated by \`sh tests/faults/run_faults.sh --write-doc\` on $(date -u '+%Y-%m-%d %H:%M') UTC
(solution 10, 2 ranks, $(nproc) cores, load $LOAD0 at the start: time limits x$SCALE). Rows marked (q)
also run in \`make test\`.

| # | fault tried | what the kit does | time to exit | what is lost | holds |
|---|-------------|-------------------|--------------|--------------|-------|
$ROWS"
printf '%s' "$TABLE"

if [ $write_doc = 1 ]; then
    doc=notebooks-md/appendix-faults.md
    printf '%s' "$TABLE" >"$W/table"
    awk -v T="$W/table" '
        /<!-- faults-table:begin -->/ { print; while ((getline l < T) > 0) print l; skip = 1; next }
        /<!-- faults-table:end -->/ { skip = 0 }
        !skip' "$doc" >"$W/doc" && cp "$W/doc" "$doc" && echo "run_faults: table written to $doc" >&2
fi
if [ -n "$FAILED" ]; then
    echo "run_faults: FAILED: row(s)$FAILED must hold (FAULTS_REQUIRE=\"$REQUIRE\")" >&2
    exit 1
fi
exit 0
