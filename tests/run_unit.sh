#!/bin/sh
# Runs the unit test binaries given as arguments. Those built from tests/mpi/ (a path with /mpi/)
# run under $MPIRUN -n 1, 2, 3 and 4 (MPI_NPS: another list, "1 2" for make check); the others
# run once as a plain process. Every run is bounded by a timeout so a hang fails instead of
# blocking CI. A run that exits 77 could not run here (e.g. the CUDA suite without a GPU): it
# counts as skipped, neither passed nor failed. Ends with one "runs: N passed, N failed, N
# skipped" line.
# Env: MPIRUN (mpirun with its flags), TEST_TIMEOUT (s, before the load's factor), MPI_NPS (the
# ranks of tests/mpi/ runs), TIMEOUT_SCALE.
set -u
# The limits (TEST_TIMEOUT, each Check case's tcase_set_timeout) were set on a quiet machine:
# scaled by the load when the run starts, as tools/load_timeout.sh does (TIMEOUT_SCALE=N fixes
# the factor; CK_TIMEOUT_MULTIPLIER is Check's own knob for its cases).
k=$(sh "$(dirname "$0")/../tools/load_timeout.sh" --factor)
timeout_s=$((${TEST_TIMEOUT:-300} * k))
export CK_TIMEOUT_MULTIPLIER=${CK_TIMEOUT_MULTIPLIER:-$k}
nps=${MPI_NPS:-1 2 3 4}
pass=0
fail=0
skip=0
failed_runs=""
run() { # label, command...
    label=$1; shift
    echo "== $label"
    if timeout "$timeout_s" "$@"; then
        pass=$((pass + 1))
    else
        rc=$?
        if [ "$rc" = 77 ]; then
            skip=$((skip + 1))
            return
        fi
        [ "$rc" = 124 ] && echo "== $label: TIMED OUT after ${timeout_s}s"
        fail=$((fail + 1))
        failed_runs="$failed_runs\n  $label (exit $rc)"
    fi
}
for bin in "$@"; do
    name=$(basename "$bin")
    case "$bin" in
    */mpi/*)
        for n in $nps; do run "$name -n $n" $MPIRUN -n "$n" "$bin"; done ;;
    *)
        run "$name" "$bin" ;;
    esac
done
[ "$fail" -gt 0 ] && printf "failed runs:$failed_runs\n"
echo "runs: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
