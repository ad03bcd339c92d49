#!/bin/sh
# bench/grade_sandbox_cost.sh [ROUNDS] — what the class mode's sandbox costs a run: the same
# command started directly and through tools/sandbox/run.sh (each backend), interleaved ROUNDS
# times (default 10); prints min and median seconds of each and the difference. Commands: true
# (the sandbox's own start and end) and mpirun -n 2 true (Open MPI's start inside it). Root.
set -u
cd "$(dirname "$0")/.." || exit 2
rounds=${1:-10}
W=$(mktemp -d) && chmod 777 "$W"
trap 'rm -rf "$W"' EXIT
mpi="mpirun --oversubscribe"
[ "$(id -u)" = 0 ] && mpi_direct="$mpi --allow-run-as-root" || mpi_direct=$mpi
t() { # seconds one command takes
    a=$(date +%s.%N); "$@" >/dev/null 2>&1; b=$(date +%s.%N)
    awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f\n", b - a }'
}
for i in $(seq "$rounds"); do
    t true >>"$W/true-direct"
    SANDBOX_BACKEND=bwrap t tools/sandbox/run.sh --uid 61098 --work "$W" -- true >>"$W/true-bwrap"
    SANDBOX_BACKEND=unshare t tools/sandbox/run.sh --uid 61098 --work "$W" -- true >>"$W/true-unshare"
    t $mpi_direct -n 2 true >>"$W/mpirun-direct"
    SANDBOX_BACKEND=bwrap t tools/sandbox/run.sh --uid 61098 --work "$W" -- $mpi -n 2 true >>"$W/mpirun-bwrap"
    SANDBOX_BACKEND=unshare t tools/sandbox/run.sh --uid 61098 --work "$W" -- $mpi -n 2 true >>"$W/mpirun-unshare"
done
stat() { sort -n "$W/$1" | awk '{ v[NR] = $1 } END { printf "%.3f %.3f", v[1], v[int((NR + 1) / 2)] }'; }
printf '%-22s %8s %8s %s\n' "command" "min s" "median s" "(of $rounds interleaved runs)"
for c in true mpirun; do
    set -- $(stat "$c-direct")
    printf '%-22s %8s %8s\n' "$c direct" "$1" "$2"
    d_min=$1 d_med=$2
    for b in bwrap unshare; do
        set -- $(stat "$c-$b")
        printf '%-22s %8s %8s   sandbox cost: %+.3f s (min), %+.3f s (median)\n' "$c in $b" "$1" "$2" \
            "$(awk -v x="$1" -v y="$d_min" 'BEGIN { print x - y }')" "$(awk -v x="$2" -v y="$d_med" 'BEGIN { print x - y }')"
    done
done
