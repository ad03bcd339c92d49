#!/bin/sh
# hvdrun_np.sh — ./hvdrun adds --oversubscribe when the processes asked for outnumber this
# machine's cores, however the count is written: -n, -np, --np, --n, -c, and summed over the
# parts of an MPMD launch (-n C ./a : -n 1 ./b). Open MPI refuses each of these without it.
# Also: a bad HVDRUN_GRACE stops it with one line before anything starts (its use: hvdrun_stop.sh).
# Usage: sh tests/launch/hvdrun_np.sh (from the repository root). Exit 0 when all start.
set -u
cores=$(nproc 2>/dev/null || echo 1)
more=$((cores + 1))
bad=0
try() {
    if ! out=$(timeout 60 ./hvdrun "$@" 2>&1); then
        echo "hvdrun_np: FAIL: ./hvdrun $* did not run on $cores cores:"
        echo "$out" | sed -n '1,6s/^/    /p'
        bad=1
    fi
}
for flag in -n -np --np --n -c; do
    try "$flag" "$more" true
done
try -n "$cores" true : -n 1 true
try -np 1 true : --n "$cores" true
# HVDRUN_GRACE (the seconds a signal leaves the ranks to stop) is checked before anything starts
for g in abc -1 1.2.3 ''; do
    out=$(HVDRUN_GRACE=$g timeout 20 ./hvdrun -n 1 true 2>&1)
    rc=$?
    case $g in '') want=0 ;; *) want=2 ;; esac # unset or empty: the default, 30
    if [ "$rc" != "$want" ] ||
       { [ "$want" = 2 ] && [ "$out" != "hvdrun: HVDRUN_GRACE=$g: expected a number of seconds such as 10 or 2.5" ]; }; then
        echo "hvdrun_np: FAIL: HVDRUN_GRACE='$g': exit $rc, want $want: $out"
        bad=1
    fi
done
HVDRUN_GRACE=2.5 try -n 1 true
[ $bad = 0 ] && echo "hvdrun_np: ok (up to $more processes on $cores cores, 8 launches; HVDRUN_GRACE checked)"
exit $bad
