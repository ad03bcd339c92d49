#!/bin/sh
# hvdrun_np.sh — ./hvdrun adds --oversubscribe when the processes asked for outnumber this
# machine's cores, however the count is written: -n, -np, --np, --n, -c, and summed over the
# parts of an MPMD launch (-n C ./a : -n 1 ./b). Open MPI refuses each of these without it.
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
[ $bad = 0 ] && echo "hvdrun_np: ok (up to $more processes on $cores cores, 7 launches)"
exit $bad
