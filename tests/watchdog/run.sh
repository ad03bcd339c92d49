#!/bin/sh
# run.sh — the dead-rank watchdog's corner cases (common/guard/watchdog.h), for real under mpirun
# with 2 ranks (build/tests/progs/prog_watchdog): each case kills rank 1 and checks rank 0's line
# (SIGKILL, and SIGHUP and SIGTERM: their default ends the process, the watchdog names them).
# Prints one line per case and exits 1 when one does not hold.
# Env: MPIRUN (mpirun with its flags), BUILD (default build).
set -u
B=${BUILD:-build}
PROG=$B/tests/progs/prog_watchdog
MPIRUN=${MPIRUN:-mpirun --allow-run-as-root --oversubscribe}
bad=0
check() { # mode, the text rank 0's line must hold, text it must not hold
    out=$(timeout 60 $MPIRUN -n 2 "$PROG" "$1" 2>&1)
    line=$(printf '%s\n' "$out" | grep 'hvdlab: error: \[rank 0\] rank 1 .*died' | head -1)
    if [ -n "$line" ] && printf '%s' "$line" | grep -q "$2" &&
        ! printf '%s\n' "$out" | grep -q "$3"; then
        echo "watchdog: $1: yes ($line)"
    else
        echo "watchdog: $1: NO; the run printed:"
        printf '%s\n' "$out" | sed 's/^/  /' | tail -15
        bad=1
    fi
}
check fork-kill 'vanished without a word' 'watchdog off'
check fork-crash 'vanished without a word' 'watchdog off'
check eintr 'vanished without a word' 'watchdog off'
check hup 'died: killed by SIGHUP' 'vanished'
check term 'died: killed by SIGTERM' 'vanished'
exit $bad
