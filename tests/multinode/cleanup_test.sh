#!/bin/sh
# cleanup_test.sh — hosts.sh leaves nothing behind when the command fails or is interrupted:
# no namespace, no process that ran in one, no mount of a host's disk, no /etc/netns entry, no
# state directory. The command starts an MPI job across both hosts and leaves it running, then
#   1. exits 3: hosts.sh must exit 3;   2. hosts.sh gets SIGTERM: it must exit 143.
# Prints "multinode-cleanup: ok (…)" or what was left; exits 77 (after hosts.sh's one line saying
# why) when namespaces cannot be made here.
set -u
here=$(cd "$(dirname "$0")" && pwd)
rec=$(mktemp /tmp/hvdhosts-cleanup.XXXXXX) || exit 2
trap 'rm -f "$rec"' EXIT
# what the command records before it fails: its state, namespaces and every pid in them
record='echo "$HOSTS_STATE" >'"$rec"'; echo "$HOSTS_NS" >>'"$rec"';
        $MPIRUN -n 4 sleep 300 & sleep 2;
        for ns in $HOSTS_NS; do ip netns pids $ns; done | tr "\n" " " >>'"$rec"'; echo >>'"$rec"''
fails=0

left_behind() { # -> prints what is left of the run recorded in $rec
    state=$(sed -n 1p "$rec")
    nss=$(sed -n 2p "$rec")
    pids=$(sed -n 3p "$rec")
    [ -n "$state" ] && [ -n "$nss" ] && [ -n "$pids" ] || { echo "nothing was recorded"; return; }
    id=$(basename "$state")
    ip netns list | grep "^$id-" | sed 's/^/namespace /' # the switch's too
    for ns in $nss; do
        [ -e "/etc/netns/$ns" ] && echo "/etc/netns/$ns"
    done
    for p in $pids; do
        # a zombie has exited (it only waits for its parent to read its status)
        st=$(ps -o stat= -p "$p" 2>/dev/null)
        [ -n "$st" ] && [ "${st#Z}" = "$st" ] && echo "process $p ($(cat /proc/$p/comm 2>/dev/null), $st)"
    done
    grep -q "$state" /proc/mounts && echo "mount $(grep "$state" /proc/mounts | head -1)"
    [ -e "$state" ] && echo "directory $state"
}

check() { # what, got rc, want rc
    i=0 # a process killed as the namespace went may take a moment to finish exiting
    while left=$(left_behind) && [ -n "$left" ] && [ $i -lt 20 ]; do sleep 0.1; i=$((i + 1)); done
    if [ "$2" = "$3" ] && [ -z "$left" ]; then
        echo "multinode-cleanup: $1: ok (exit $2; $(sed -n 2p "$rec" | wc -w) namespaces, $(sed -n 3p "$rec" | wc -w) processes in them, none left)"
    else
        fails=$((fails + 1))
        echo "multinode-cleanup: $1: FAILED (exit $2, want $3); left behind:"
        echo "$left" | sed 's/^/    /'
    fi
}

sh "$here/hosts.sh" run sh -c "$record; exit 3"
rc=$?
[ "$rc" = 77 ] && exit 77 # hosts.sh said why
check "failing command" "$rc" 3

: >"$rec"
sh "$here/hosts.sh" run sh -c "$record; sleep 300" &
job=$!
i=0
while [ "$(wc -l <"$rec")" -lt 3 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill -TERM "$job"
wait "$job"
check "SIGTERM" $? 143
[ "$fails" = 0 ]
