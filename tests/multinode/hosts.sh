#!/bin/sh
# hosts.sh — several network hosts on this one machine, for running the kit across "nodes".
#
#   tests/multinode/hosts.sh [-n HOSTS] [-s SLOTS] [-r RATE] run COMMAND [ARG...]
#       makes hosts h1..hN, runs COMMAND on h1 (as a batch script runs on the first node of an
#       allocation) with the variables below set, and always removes the hosts afterwards, also
#       when COMMAND fails or the script is interrupted. Exits with COMMAND's status.
#   tests/multinode/hosts.sh [-n HOSTS] [-s SLOTS] [-r RATE] up     prints the STATE directory
#   tests/multinode/hosts.sh exec STATE COMMAND [ARG...]          runs COMMAND on h1 of STATE
#   tests/multinode/hosts.sh down STATE                           removes them (processes too)
#
#   -n HOSTS  number of hosts (default 2);  -s SLOTS  MPI slots per host (default 2)
#   -r RATE   limit each host's outgoing link to RATE with tc tbf (e.g. 1gbit; default: no limit)
#
# Each host is a Linux network namespace with its own hostname (a UTS namespace, which is what
# makes Open MPI, MPI_Comm_split_type(SHARED) and so hvd_local_rank() see separate nodes), its
# own address 10.99.0.I/24 on its eth0, and its own local disk: the directory $HOSTS_LOCAL is,
# on each host, a bind mount of that host's own $HOSTS_STATE/disk/hI, like a node's /scratch.
# The hosts are joined by a bridge in a switch namespace of their own; nothing is added to this
# machine's own network. Everything else (the repository, /tmp) is shared, like a cluster's home.
# mpirun reaches the other hosts through agent.sh (Open MPI's plm_rsh_agent) in place of ssh; like
# ssh it starts them with a clean environment, so only what mpirun forwards (-x, which ./hvdrun
# adds for HVD_* and HVDLAB_*) reaches their ranks.
#
# COMMAND sees:
#   MPIRUN        mpirun with the flags for these hosts: `$MPIRUN -n 4 ./prog` (unquoted, like
#                 the Makefile's MPIRUN) places 2 ranks on each of h1, h2; add --map-by node to
#                 deal ranks round the hosts instead.
#   HOSTS_LIST    h1:SLOTS,h2:SLOTS,...      HOSTS_NAMES  h1 h2 ...
#   HOSTS_LOCAL   the node-local directory   HOSTS_STATE  where the hosts' disks are: disk/h1 ...
#                 (these are not forwarded to other hosts' ranks: pass paths as arguments)
#   HOSTS_NS      the namespaces, in host order (`ip -n NS -s link show eth0` counts the bytes)
#   HOSTS_NET     10.99.0.0/24
# Needs root, ip(8) and unshare(1); where namespaces cannot be made it prints one line
# "multinode: skipped, ..." and exits 77.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
net_prefix=10.99.0
HOSTS_NET=$net_prefix.0/24

die() { echo "hosts.sh: $*" >&2; exit 2; }
skip() { echo "multinode: skipped, $*"; exit 77; }

nhosts=2
slots=2
rate=
while getopts n:s:r: opt; do
    case $opt in
    n) nhosts=$OPTARG ;;
    s) slots=$OPTARG ;;
    r) rate=$OPTARG ;;
    *) die "usage: hosts.sh [-n HOSTS] [-s SLOTS] [-r RATE] run|up COMMAND..." ;;
    esac
done
shift $((OPTIND - 1))
case "$nhosts$slots" in *[!0-9]*) die "-n and -s take whole numbers, got '$nhosts' and '$slots'" ;; esac
[ "$nhosts" -ge 1 ] && [ "$nhosts" -le 200 ] || die "-n must be 1..200, got $nhosts"
[ "$slots" -ge 1 ] || die "-s must be at least 1, got $slots"

# can_make_hosts: exits 77 with the reason when this machine cannot make namespaces.
can_make_hosts() {
    [ "$(id -u)" = 0 ] || skip "network namespaces need root (running as $(id -un))"
    for t in ip unshare hostname mount; do
        command -v "$t" >/dev/null 2>&1 || skip "no $t command"
    done
    probe=hvdprobe$$
    why=$(ip netns add "$probe" 2>&1) || skip "ip netns add failed: $why"
    ip netns del "$probe"
}

# State of one set of hosts: $state/ns (namespace names, host order), $state/disk/hI,
# $state/local (the mount point), $state/env (the variables COMMAND sees).
load() { # STATE
    state=$1
    [ -f "$state/ns" ] || die "$state is not a hosts.sh state directory"
    . "$state/env"
}

up() {
    can_make_hosts
    state=$(mktemp -d /tmp/hvdhosts.XXXXXX) || die "mktemp failed"
    id=$(basename "$state")
    sw=$id-sw
    : >"$state/ns"
    mkdir -p "$state/disk" "$state/local" || die "cannot make $state/disk"
    ip netns add "$sw" || return 1
    echo "$sw" >"$state/ns.switch"
    ip -n "$sw" link add br0 type bridge && ip -n "$sw" link set br0 up || return 1
    hosts=
    list=
    names=
    i=1
    while [ "$i" -le "$nhosts" ]; do
        h=h$i
        ns=$id-$h
        ip netns add "$ns" || return 1
        echo "$ns" >>"$state/ns"
        # the veth pair is made in the switch namespace, its host end moved straight into ns
        ip -n "$sw" link add "p$i" type veth peer name eth0 netns "$ns" || return 1
        ip -n "$sw" link set "p$i" master br0 up || return 1
        ip -n "$ns" link set lo up || return 1
        ip -n "$ns" addr add "$net_prefix.$i/24" dev eth0 || return 1
        ip -n "$ns" link set eth0 up || return 1
        if [ -n "$rate" ]; then
            tc -n "$ns" qdisc add dev eth0 root tbf rate "$rate" burst 128kb latency 50ms ||
                return 1
        fi
        mkdir -p "$state/disk/$h"
        hosts="$hosts$net_prefix.$i $h
"
        list="$list${list:+,}$h:$slots"
        names="$names${names:+ }$h"
        i=$((i + 1))
    done
    # /etc/netns/NS/hosts: `ip netns exec NS` bind-mounts it over /etc/hosts, naming the hosts.
    # (three tries: another run's down may remove an empty /etc/netns between mkdir and write)
    for ns in $(cat "$state/ns"); do
        for try in 1 2 3; do
            mkdir -p "/etc/netns/$ns" &&
                printf '127.0.0.1 localhost\n%s' "$hosts" 2>/dev/null >"/etc/netns/$ns/hosts" &&
                break
            [ "$try" = 3 ] && return 1
        done
    done
    ns_list=$(tr '\n' ' ' <"$state/ns")
    mpirun="$repo/hvdrun --host $list --mca plm_rsh_agent $here/agent.sh"
    mpirun="$mpirun --mca plm_rsh_no_tree_spawn 1"
    mpirun="$mpirun --mca oob_tcp_if_include $HOSTS_NET --mca btl_tcp_if_include $HOSTS_NET"
    cat >"$state/env" <<EOF
MPIRUN='$mpirun'
HOSTS_LIST='$list'
HOSTS_NAMES='$names'
HOSTS_LOCAL='$state/local'
HOSTS_STATE='$state'
HOSTS_NS='${ns_list% }'
HOSTS_NET='$HOSTS_NET'
export MPIRUN HOSTS_LIST HOSTS_NAMES HOSTS_LOCAL HOSTS_STATE HOSTS_NS HOSTS_NET
EOF
}

# down STATE: kill every process still inside the hosts, delete the namespaces (which deletes
# their links and the bridge), their /etc/netns entries and the state directory. Safe to call
# on a half-made set and twice.
down() {
    state=$1
    [ -d "$state" ] || return 0
    all=$(cat "$state/ns" "$state/ns.switch" 2>/dev/null)
    for ns in $all; do
        pids=$(ip netns pids "$ns" 2>/dev/null)
        [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
    done
    tries=0
    for ns in $all; do
        while [ -n "$(ip netns pids "$ns" 2>/dev/null)" ] && [ "$tries" -lt 50 ]; do
            sleep 0.1
            tries=$((tries + 1))
        done
        ip netns del "$ns" 2>/dev/null
        rm -rf "/etc/netns/$ns"
    done
    rmdir /etc/netns 2>/dev/null # only when no other run's entries are left in it
    rm -rf "$state"
}

# on_host STATE HOST COMMAND...: run COMMAND in HOST's namespace, under HOST's hostname, with
# HOST's disk mounted at $HOSTS_LOCAL. (`ip netns exec` gives it a mount namespace of its own,
# so the bind mount is seen by nothing else and goes when its last process does.)
on_host() {
    st=$1 h=$2
    shift 2
    ns=$(basename "$st")-$h
    exec ip netns exec "$ns" unshare --uts sh -c \
        'hostname "$1" && mount --bind "$2/disk/$1" "$2/local" && shift 2 && exec "$@"' \
        sh "$h" "$st" "$@"
}

[ $# -ge 1 ] || die "usage: hosts.sh [-n HOSTS] [-s SLOTS] [-r RATE] run|up COMMAND... | exec|down STATE"
cmd=$1
shift
case $cmd in
run)
    [ $# -ge 1 ] || die "run needs a COMMAND"
    state=
    trap 'down "$state"' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    up || { echo "hosts.sh: could not make the hosts" >&2; exit 2; }
    . "$state/env"
    # in the background and waited for, so that a signal to this script runs the trap at once
    (on_host "$state" h1 "$@") &
    wait $!
    exit $?
    ;;
up)
    up || { rc=$?; down "$state"; die "could not make the hosts"; }
    echo "$state"
    ;;
exec)
    [ $# -ge 2 ] || die "usage: hosts.sh exec STATE COMMAND..."
    load "$1"
    shift
    on_host "$state" h1 "$@"
    ;;
on)  # used by agent.sh: on STATE HOST COMMAND...
    on_host "$@"
    ;;
down)
    [ $# -eq 1 ] || die "usage: hosts.sh down STATE"
    load "$1"
    down "$1"
    ;;
*)
    die "unknown command '$cmd' (run, up, exec, down)" ;;
esac
