#!/bin/sh
# stage_timeout.sh — `timeout -k 10 SECONDS COMMAND...` for the stages of make gpu-check
# (mk/gpu.mk), ended too by a signal to make's process group. timeout(1) runs its command in a
# process group of its own, which such a signal does not reach: when gpu_session.sh's time limit
# cut gpu-check, the stage in progress (a bench holding the GPU) went on for up to its own limit,
# beside the script's next stages or into its next call. This script stays in make's group and
# passes TERM, INT or HUP on to timeout, which passes it on to its command's group.
# Usage: sh tools/stage_timeout.sh SECONDS COMMAND [ARGS...]. Exit status: timeout's (124: cut
# at SECONDS; 128 + N: ended by signal N).
limit=$1
shift
t='' signalled=''
trap 'signalled=1; [ -z "$t" ] || kill -TERM "$t" 2>/dev/null' TERM INT HUP
# In the background: its stdin is /dev/null (no stage reads one), and its other descriptors,
# make's jobserver among them, are left as they are.
timeout -k 10 "$limit" "$@" &
t=$!
[ -z "$signalled" ] || kill -TERM "$t" 2>/dev/null # it came before timeout had started
while :; do
    wait "$t"
    rc=$?
    kill -0 "$t" 2>/dev/null || exit "$rc" # else a trapped signal ended the wait: wait again
done
