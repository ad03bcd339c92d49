#!/bin/sh
# load_timeout.sh SECONDS COMMAND [ARG...] — timeout(1) with a limit set on a quiet machine,
# scaled to the load when the command starts: SECONDS x the 1-minute load average per core,
# rounded up, at least 1 and at most 8 (a stage that needs more than 8x is stuck, not slow).
# TIMEOUT_SCALE=N fixes the factor (1: the limits as written). One line on stderr when it scales.
# The test stages of make test run under it (Makefile's TIMEOUT), so that other work beside
# make test on a small machine stretches their limits instead of failing them.
# load_timeout.sh --factor prints the factor alone (run_faults.sh, signals.sh, run_unit.sh).
f=${TIMEOUT_SCALE:-$(awk -v n="$(nproc)" '{ f = int($1 / n + 0.999); print (f < 1 ? 1 : (f > 8 ? 8 : f)) }' /proc/loadavg)}
case $f in '' | *[!0-9]* | 0) f=1 ;; esac
[ "${1:-}" = --factor ] && { echo "$f"; exit 0; }
case ${1:-} in '' | *[!0-9]*) echo "usage: load_timeout.sh SECONDS COMMAND [ARG...] | --factor" >&2; exit 2 ;; esac
s=$1
shift
[ "$f" -gt 1 ] && echo "load_timeout: load $(cut -d' ' -f1 /proc/loadavg) on $(nproc) core(s): the limit of $s s is $((s * f)) s" >&2
exec timeout $((s * f)) "$@"
