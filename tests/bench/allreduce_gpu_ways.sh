#!/bin/sh
# allreduce_gpu_ways.sh — tools/allreduce_gpu_ways.awk (make bench-allreduce-gpu's table of the
# staged ways) on rows in bench/allreduce_gpu.c's format: the fastest way per size, a way faster
# at every size, one slower at a size, and a way whose run gave no rows. Runs without a GPU (it
# checks the text processing, not a measurement).
set -u
AWK_FILE=${1:-tools/allreduce_gpu_ways.awk}
TEST=allreduce_gpu_ways
# shellcheck source=tests/bench/check.sh
. "$(dirname "$0")/check.sh"

# rows NAME T64K T64M: a 2-rank run's two rows with those times (us)
rows() {
    printf '# hvd_allreduce on device buffers, 2 rank(s), path mpi; float SUM in place\n' >"$d/$1"
    printf '#      size |    time us     algbw     busbw\n' >>"$d/$1"
    printf '        64K | %10s      1.00      1.00\n        64M | %10s      9.00      9.00\n' \
        "$2" "$3" >>"$d/$1"
}

expect() { # name, expected line (grep -F)
    awk -v ways="auto ipc host" -f "$AWK_FILE" "$d/auto" "$d/ipc" "$d/host" >"$d/out" 2>&1
    grep -qF -- "$2" "$d/out"
    rc=$?
    check "$1" "$rc"
}

rows auto 100.0 8000.0
rows ipc 80.0 1000.0
rows host 50.0 20000.0
expect "the fastest per size (64K)" "64K |       100.0        80.0        50.0 | host"
expect "the fastest per size (64M)" "64M |      8000.0      1000.0     20000.0 | ipc"
expect "faster at every size" "ipc against auto: faster at every size (1.25-8.00x the default's speed)"
expect "slower at one size" "host against auto: slower at 64M (0.40-2.00x the default's speed)"
: >"$d/host"
expect "a run without rows" "host against auto: no rows from host"
rows host 50.0 20000.0
: >"$d/ipc"
expect "a run without rows, the next still its own" "host against auto: slower at 64M"
expect "a run without rows, its column" "64M |      8000.0           -     20000.0 | auto"
finish
