#!/bin/sh
# Runs the unit test binaries given as arguments. Those built from tests/mpi/ (a path with /mpi/)
# run under $MPIRUN -n 1, 2, 3 and 4; the others run once as a plain process. Every run is bounded
# by a timeout so a hang fails instead of blocking CI. Ends with one "N passed, N failed" line.
# Env: MPIRUN (mpirun with its flags), TEST_TIMEOUT (s).
set -u
timeout_s=${TEST_TIMEOUT:-300}
pass=0
fail=0
failed_runs=""
run() { # label, command...
    label=$1; shift
    echo "== $label"
    if timeout "$timeout_s" "$@"; then
        pass=$((pass + 1))
    else
        rc=$?
        [ "$rc" = 124 ] && echo "== $label: TIMED OUT after ${timeout_s}s"
        fail=$((fail + 1))
        failed_runs="$failed_runs\n  $label (exit $rc)"
    fi
}
for bin in "$@"; do
    name=$(basename "$bin")
    case "$bin" in
    */mpi/*)
        for n in 1 2 3 4; do run "$name -n $n" $MPIRUN -n "$n" "$bin"; done ;;
    *)
        run "$name" "$bin" ;;
    esac
done
[ "$fail" -gt 0 ] && printf "failed runs:$failed_runs\n"
echo "runs: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
