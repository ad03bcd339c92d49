#!/bin/sh
# hvdrun_stop.sh — ./hvdrun's own parts, for real under mpirun (no training program needed):
#   1. --help prints the kit's usage (what it adds to mpirun, the signals and HVDRUN_GRACE,
#      --elastic, --min-np, --max-np), not mpirun's.
#   2. stdin: a `while read` loop that calls ./hvdrun keeps its input (the job reads /dev/null);
#      with mpirun's --stdin rank the job reads it.
#   3. one SIGTERM to a job whose ranks never stop at the SIGUSR1 it becomes (they ignore it, as
#      a rank frozen or hung in a collective does): the job ends after HVDRUN_GRACE, exit 143,
#      nothing of it left running.
#   4. one SIGTERM while mpirun is stuck starting the job (its ssh to another host hangs): the
#      same.
#   5. a second signal 1 s or more after the first ends the job at once, long before the grace.
#   6. kill -9 of ./hvdrun itself: mpirun and its ranks end (mpirun's parent death signal).
# Times: each limit is many times what the step takes on a loaded 2-core machine; the faults they
# catch never end (the old ./hvdrun still ran at the script's timeout).
# Usage: sh tests/launch/hvdrun_stop.sh (from the repository root). Exit 0 when all hold.
set -u
W=$(mktemp -d /tmp/hvdlab-hvdrun-XXXXXX)
trap 'rm -rf "$W"' EXIT
bad=0
fail() { echo "hvdrun_stop: FAIL: $*"; bad=1; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
less() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
# left SID: the processes of mpirun's session still running (zombies are ended)
left() { ps -o pid=,stat=,args= -s "$1" 2>/dev/null | awk '$2 !~ /^Z/'; }
# hvd_of PID: the ./hvdrun that timeout(1) PID runs; mpi_of PID: ./hvdrun's mpirun, once it has
# one (at most 30 s)
hvd_of() { pgrep -P "$1" | head -1; }
mpi_of() {
    i=0
    while [ $i -lt 300 ]; do
        h=$(hvd_of "$1")
        [ -n "$h" ] && m=$(pgrep -P "$h" -x mpirun) && { echo "$m"; return 0; }
        sleep 0.1; i=$((i + 1))
    done
    return 1
}
# a rank that never stops at SIGUSR1 (it ignores it) and has started (its pid file)
printf '#!/bin/sh\ntrap "" USR1\n: >"%s/started.$$"\nexec sleep 600\n' "$W" >"$W/stuck.sh"
printf '#!/bin/sh\nexec sleep 600\n' >"$W/hang_ssh.sh"
chmod +x "$W/stuck.sh" "$W/hang_ssh.sh"
started() { # N: N ranks have started (at most 60 s)
    i=0
    while [ "$(ls "$W" | grep -c '^started\.')" -lt "$1" ] && [ $i -lt 600 ]; do
        sleep 0.1; i=$((i + 1))
    done
}

# ---- 1. --help
out=$(./hvdrun --help 2>&1)
rc=$?
miss=
for w in usage: --oversubscribe --allow-run-as-root HVDRUN_GRACE SIGTERM SIGUSR1 --elastic \
    --min-np --max-np --stdin; do
    case $out in *"$w"*) ;; *) miss="$miss $w" ;; esac
done
if [ $rc != 0 ] || [ -n "$miss" ] || echo "$out" | grep -q "Usage: mpirun"; then
    fail "./hvdrun --help: exit $rc, missing:${miss:- nothing}; first line: $(echo "$out" | head -1)"
fi
[ "$(./hvdrun -h 2>&1)" = "$out" ] || fail "./hvdrun -h differs from ./hvdrun --help"

# ---- 2. stdin
n=$(printf 'a\nb\nc\n' | while read -r x; do timeout 60 ./hvdrun -n 1 cat >/dev/null 2>&1; echo "$x"; done | wc -l)
[ "$n" = 3 ] || fail "a while-read loop of 3 lines calling ./hvdrun -n 1 cat ran $n time(s)"
got=$(printf 'a\nb\n' | timeout 60 ./hvdrun --stdin rank -n 1 cat 2>/dev/null | tr '\n' ' ')
[ "$got" = "a b " ] || fail "./hvdrun --stdin rank -n 1 cat: read '$got', due 'a b '"

# ---- 3-5: one job, one or two signals; NAME GRACE SECOND LIMIT ARGS...
stop() {
    name=$1 grace=$2 second=$3 limit=$4
    shift 4
    rm -f "$W"/started.*
    HVDRUN_GRACE=$grace timeout -k 5 60 ./hvdrun "$@" >"$W/$name.out" 2>&1 &
    job=$!
    mpi=$(mpi_of "$job") || { fail "$name: no mpirun started"; kill -9 $job; return; }
    case $name in stuck*) started 2 ;; *) sleep 2 ;; esac
    t0=$(now)
    h=$(hvd_of $job)
    kill -TERM "$h"
    [ "$second" = 0 ] || { sleep "$second"; kill -INT "$h"; }
    wait $job
    rc=$?
    t=$(secs "$t0")
    rest=$(left "$mpi")
    if [ $rc != 143 ] || ! less "$t" "$limit" || [ -n "$rest" ]; then
        fail "$name: exit $rc (143 due) after $t s (under $limit due); left running: ${rest:-nothing}"
        sed 's/^/    /' "$W/$name.out" | head -6
        [ -z "$rest" ] || pkill -KILL -s "$mpi"
    else echo "hvdrun_stop: $name: exit 143 after $t s, nothing left"; fi
}
stop stuck 2 0 30 -n 2 "$W/stuck.sh"
stop spawn 2 0 30 --mca plm_rsh_agent "$W/hang_ssh.sh" --host hvdlab-nohost -n 1 true
stop stuck-twice 60 1.5 30 -n 2 "$W/stuck.sh"
grep -q "^hvdrun: another signal (SIGINT): ending the job now$" "$W/stuck-twice.out" ||
    fail "stuck-twice: no 'another signal' line"

# ---- 6. kill -9 of ./hvdrun: mpirun ends its ranks and itself
rm -f "$W"/started.*
timeout -k 5 60 ./hvdrun -n 2 "$W/stuck.sh" >"$W/kill9.out" 2>&1 &
job=$!
if mpi=$(mpi_of $job); then
    started 2
    kill -9 "$(hvd_of $job)"
    i=0
    while [ -n "$(left "$mpi")" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
    rest=$(left "$mpi")
    if [ -n "$rest" ]; then
        fail "kill -9 of ./hvdrun: 30 s later still running: $rest"
        pkill -KILL -s "$mpi"
    else echo "hvdrun_stop: kill -9 of ./hvdrun: mpirun and its ranks ended"; fi
else fail "kill -9: no mpirun started"; fi
wait $job 2>/dev/null
[ $bad = 0 ] && echo "hvdrun_stop: ok (--help, stdin, a stuck job and a stuck start end on one signal, a second ends it at once, kill -9 leaves nothing)"
exit $bad
