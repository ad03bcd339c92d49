#!/bin/sh
# grade_sizes.sh SEED — the class mode's graded sizes, drawn from SEED: the same SEED gives the
# same lines on any machine (shell arithmetic, no awk or shell random generator), so a class is
# regraded exactly with the kit's commit and the seed. Prints key=value lines for the graders'
# GRADE_SIZES_FILE (tests/grade/grade_sizes.c holds the ranges they accept):
#   np=2             ranks of the main runs (run c adds one; the checks assume 2 here)
#   train_n          training images: 384 to 768, a multiple of 64
#   test_n           validation images: 192 to 384, a multiple of 64
#   batch            48 or 64
#   epochs=2 warmup=1 base_lr=0.01
#   seed             the programs' --seed: SEED itself (data order and, mixed with the rank,
#                    the initial weights; the reference run uses the same)
set -u
case ${1:-} in
'' | *[!0-9]*) echo "grade_sizes.sh: SEED '${1:-}': expected a whole number from 0 to 2147483647" >&2; exit 2 ;;
esac
[ ${#1} -le 10 ] && [ "$1" -le 2147483647 ] || {
    echo "grade_sizes.sh: SEED '$1': expected a whole number from 0 to 2147483647" >&2
    exit 2
}
seed=$(echo "$1" | sed "s/^0*//")
seed=${seed:-0} # no leading 0: the shell would read it as octal
x=$seed
next() { x=$(( (x * 1103515245 + 12345) % 2147483648 )); } # the C standard's example LCG
next; next
train_n=$(( 384 + (x / 65536 % 7) * 64 ))
next
test_n=$(( 192 + (x / 65536 % 4) * 64 ))
next
batch=$(( x / 65536 % 2 == 0 ? 48 : 64 ))
printf 'np=2\ntrain_n=%d\ntest_n=%d\nbatch=%d\nepochs=2\nwarmup=1\nbase_lr=0.01\nseed=%d\n' \
    "$train_n" "$test_n" "$batch" "$seed"
