#!/bin/sh
# stage_timeout.sh — tools/stage_timeout.sh, gpu-check's stage limit: the command's exit status
# comes back, 124 when the limit cuts it, the caller's descriptors reach it, and a signal to the
# caller's process group (the cut of gpu_session.sh's make stage) ends the command too, which
# plain timeout(1) leaves running.
# Usage: sh tests/bench/stage_timeout.sh (from anywhere). Exit 0 when all hold.
TEST=stage_timeout
cd "$(dirname "$0")/../.." || exit 2
. tests/bench/check.sh
stage=tools/stage_timeout.sh

sh $stage 10 sh -c 'exit 3' >"$d/out" 2>&1
check "the command's status comes back" $(($? != 3))
sh $stage 1 sleep 30 >"$d/out" 2>&1
check "a command past the limit: 124" $(($? != 124))
# make's jobserver descriptors reach the command (a stage that runs $(MAKE) under make -j)
sh $stage 10 sh -c 'echo jobserver >&7' 7>"$d/fd7" >"$d/out" 2>&1
grep -qx jobserver "$d/fd7"
check "the caller's descriptors reach the command" $?

# group WRAPPER: runs `WRAPPER 60 <a sleep that writes its pid>` in a new process group, as
# gpu_session.sh's timeout runs make, signals that group, and says whether the sleep is gone.
group() {
    rm -f "$d/pid"
    setsid sh -c "$1 60 sh -c 'echo \$\$ > $d/pid; exec sleep 60'" >"$d/out" 2>&1 &
    leader=$!
    i=0
    while [ ! -s "$d/pid" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
    kill -TERM -"$leader" 2>/dev/null
    i=0
    while kill -0 "$(cat "$d/pid")" 2>/dev/null && [ $i -lt 40 ]; do sleep 0.05; i=$((i + 1)); done
    if kill -0 "$(cat "$d/pid")" 2>/dev/null; then
        echo "the command (pid $(cat "$d/pid")) outlived the signal to its caller's group" \
            >>"$d/out"
        kill -9 "$(cat "$d/pid")" 2>/dev/null
        return 1
    fi
}
group "sh $stage"
check "a signal to the caller's group ends the command" $?
# the reason for the script: plain timeout(1) leaves it running (must fail)
group "timeout -k 10"
check "plain timeout(1) leaves the command running (the case this script is for)" $(($? == 0))
finish
