#!/bin/sh
# allreduce_gpu_compare.sh — tools/allreduce_gpu_compare.awk (make bench-allreduce-gpu's verdict)
# on rows in the exact formats of bench/allreduce_gpu.c and bench/peer_gloo_allreduce.py: the
# verdict lines for targets met, missed by speed, missed by the ceiling, a missing peer, no
# staged rows at all, and the ceiling of both ranks copying at once (where the 2-rank run has
# it). Runs without a GPU (it checks the text processing, not a measurement).
set -u
AWK_FILE=${1:-tools/allreduce_gpu_compare.awk}
TEST=allreduce_gpu_compare
# shellcheck source=tests/bench/check.sh
. "$(dirname "$0")/check.sh"

# n1: NCCL 1 rank + ceiling; n2: staged, 2 ranks; gloo: the peer. $1 = staged us at 64M, $2
# gloo us at 64K, $3 (optional) the 2-rank run's ceiling at 64M, both ranks copying at once.
write() {
    both=""
    [ -n "${3:-}" ] && both=$(printf ' |    10.00    10.00 %19s' "$3")
    cat >"$d/n1" <<ROWS
# hvd_allreduce on device buffers, 1 rank(s), path nccl; float SUM in place; median of the slowest rank
#      size |    time us     algbw     busbw | d2h GB/s h2d GB/s staged-ceiling GB/s
        64K |       20.0      3.28      0.00 |     5.00     6.00                2.73
        64M |     1000.0     67.11      0.00 |    25.00    25.00               12.50
ROWS
    alg=$(awk -v t="$1" 'BEGIN { printf "%.2f", 67108864 / (t * 1e-6) / 1e9 }')
    cat >"$d/n2" <<ROWS
# hvd_allreduce on device buffers, 2 rank(s), path mpi; float SUM in place; median of the slowest rank
#      size |    time us     algbw     busbw
        64K |       50.0      1.31      1.31
        64M | $(printf '%10.1f' "$1") $(printf '%9s' "$alg")      0.00$both
ROWS
    printf '# torch.distributed gloo allreduce\ngloo.64K.time_us %s us algbw 1 busbw 1\ngloo.64M.time_us 9000.0 us algbw 7.46 busbw 7.46\n' "$2" >"$d/gloo"
}

expect() { # name, expected line (grep -F), files...
    name=$1 want=$2
    shift 2
    awk -f "$AWK_FILE" "$@" >"$d/out" 2>&1
    grep -qF -- "$want" "$d/out"
    rc=$?
    [ "$rc" -eq 0 ] || name="$name, no line \"$want\" in"
    check "$name" "$rc"
}

write 6000.0 60.0 # 64M staged 11.18 GB/s = 89 % of 12.50; faster than gloo at both sizes
expect "targets met (speed)" "staged >= 1.0x gloo at every size: met" "$d/n1" "$d/n2" "$d/gloo"
expect "targets met (ceiling)" "of its copy ceiling from 64 MiB: met" "$d/n1" "$d/n2" "$d/gloo"
expect "the speed verdict's figure" "met (lowest gloo/staged 1.20, at 64K)" "$d/n1" "$d/n2" "$d/gloo"
expect "the ceiling verdict's figure" "from 64 MiB: met (64M 89%)" "$d/n1" "$d/n2" "$d/gloo"
expect "the table's 64M row" "64M |       6000.0       9000.0        1.50 |         11.18         12.50       89" \
    "$d/n1" "$d/n2" "$d/gloo"
write 6000.0 45.0 # gloo faster at 64K
expect "slower than gloo" "staged >= 1.0x gloo at every size: NOT met at 64K" "$d/n1" "$d/n2" "$d/gloo"
write 8000.0 60.0 # 64M staged 8.39 GB/s = 67 % of the ceiling, still faster than gloo
expect "under 70 % of the ceiling" "of its copy ceiling from 64 MiB: NOT met at 64M (64M 67%)" "$d/n1" "$d/n2" "$d/gloo"
expect "under 70 %, speed still met" "staged >= 1.0x gloo at every size: met" "$d/n1" "$d/n2" "$d/gloo"
awk -f "$AWK_FILE" "$d/n1" "$d/n2" "$d/gloo" >"$d/out" 2>&1
! grep -q "both ranks copying" "$d/out"
check "no 2-rank ceiling, no verdict on it" $?
write 8000.0 60.0 11.00 # 8.39 GB/s: 67 % of one rank's ceiling, 76 % of both ranks' at once
expect "both ranks' ceiling met" "copy ceiling of both ranks copying at once from 64 MiB: met (64M 76%)" \
    "$d/n1" "$d/n2" "$d/gloo"
expect "one rank's ceiling still judged apart" "of its copy ceiling from 64 MiB: NOT met at 64M (64M 67%)" \
    "$d/n1" "$d/n2" "$d/gloo"
expect "the table's 64M row, both columns" "12.50       67 |         11.00       76" "$d/n1" "$d/n2" "$d/gloo"
write 8000.0 60.0 13.00 # 65 % of both ranks' ceiling
expect "both ranks' ceiling missed" "both ranks copying at once from 64 MiB: NOT met at 64M (64M 65%)" \
    "$d/n1" "$d/n2" "$d/gloo"
: >"$d/empty"
expect "no peer rows" "no gloo figure for 64K 64M" "$d/n1" "$d/n2" "$d/empty"
expect "no staged rows" "no staged rows" "$d/n1" "$d/empty" "$d/gloo"
awk -f "$AWK_FILE" "$d/n1" "$d/empty" "$d/gloo" >"$d/out" 2>&1
[ $? -ne 0 ]
check "no staged rows: a non-zero exit" $?
finish
