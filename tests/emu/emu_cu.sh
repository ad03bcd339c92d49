#!/bin/sh
# emu_cu.sh IN.cu OUT.cu — a kernel file rewritten for the CPU emulator (cuda_emu.cuh): each
# launch `k<<<grid, block[, shared[, stream]]>>>(args)` becomes
# `emu_kernel(k, grid, block, ...)(args)`, and each `extern __shared__ T a[];` a pointer to the
# block's dynamic shared memory. A launch must sit on one line (the kit's do;
# check_cuda_streams.sh reads them the same way). Nothing else changes, and a #line names IN, so
# the compiler's messages point into IN at its own line numbers.
set -eu
[ $# -eq 2 ] || { echo "usage: emu_cu.sh IN.cu OUT.cu" >&2; exit 2; }
tmp="$2.tmp"
sed -e 's/\([A-Za-z_][A-Za-z0-9_]*\(<[^<>;]*>\)\{0,1\}\)<<<\(.*\)>>>(/emu_kernel(\1, \3)(/' \
    -e 's/extern __shared__ \([A-Za-z_][A-Za-z0-9_ ]*[A-Za-z0-9_]\) \([A-Za-z_][A-Za-z0-9_]*\)\[\];/\1 *\2 = (\1 *)emu_dynamic_shared();/' \
    "$1" >"$tmp"
# every launch rewritten, or the file would not compile: say which line instead
if grep -n '<<<\|>>>' "$tmp" >&2; then
    echo "emu_cu.sh: $1: a launch above is not on one line or not of the form k<<<...>>>(" >&2
    rm -f "$tmp"
    exit 1
fi
# the compiler's messages name the original file and its lines
{ printf '#line 1 "%s"\n' "$1"; cat "$tmp"; } >"$2"
rm -f "$tmp"
