#!/bin/sh
# flags_stamp.sh — an object is compiled again when its build directory's flags change (the
# Makefile's compile-flags.txt), and only then. One small object in a scratch BUILD, four makes:
# new, same flags, another OPT, the same with WERROR= (which changes no object).
# Usage: MAKE=make sh tests/build/flags_stamp.sh   (make test-build-flags)
TEST=flags_stamp
# shellcheck source=tests/bench/check.sh
. "$(dirname "$0")/../bench/check.sh"
MAKE=${MAKE:-make}
obj=common/base/timer
compiles() { # make with these variables; how many times it compiled $obj.c (its command line:
    # without the caller's MAKEFLAGS, whose -s would hide it)
    MAKEFLAGS='' MFLAGS='' "$MAKE" --no-print-directory BUILD="$d/build" "$@" "$d/build/$obj.o" \
        >"$d/out" 2>&1 || return 9
    grep -c -- "-c $obj.c " "$d/out"
}
n=$(compiles OPT=-O2); [ "$n" = 1 ]; check "a new build directory compiles" $?
n=$(compiles OPT=-O2); [ "$n" = 0 ]; check "the same flags again compile nothing" $?
n=$(compiles OPT=-O1); [ "$n" = 1 ]; check "OPT=-O1 after -O2 compiles again" $?
grep -q -- '-O1' "$d/build/compile-flags.txt" >"$d/out" 2>&1
check "compile-flags.txt holds the new flags" $?
n=$(compiles OPT=-O1 WERROR=); [ "$n" = 0 ]; check "WERROR= alone compiles nothing" $?
finish
