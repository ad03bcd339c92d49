#!/bin/sh
# bench/allreduce_hosts.sh BUILD — flat ring against HVD_HIERARCHICAL_ALLREDUCE across 2 hosts of
# 2 ranks (tests/multinode/hosts.sh: network namespaces on this machine), with the link between
# the hosts unlimited, then limited by tc tbf to 10 and 1 Gbit/s so that the cross-host cost
# shows. One bench/allreduce run per link: its "hvd" columns are the hierarchical path, its
# "ring" columns the flat ring over all 4 ranks, interleaved in the same passes.
# Env: HOSTS_BENCH_ARGS (default: --min-bytes 64K --max-bytes 64M --passes 6).
# Prints one "skipped" line and exits 0 where hosts.sh cannot make hosts (not root, no ip).
set -u
build=${1:-build}
here=$(cd "$(dirname "$0")/.." && pwd)
hosts=$here/tests/multinode/hosts.sh
args=${HOSTS_BENCH_ARGS:---min-bytes 64K --max-bytes 64M --passes 6}
if [ ! -x "$hosts" ]; then
    echo "bench-allreduce hosts: skipped, no tests/multinode/hosts.sh"
    exit 0
fi
for rate in "" 10gbit 1gbit; do
    echo "## 2 hosts x 2 ranks, link between the hosts: ${rate:-unlimited (veth)}"
    HVD_HIERARCHICAL_ALLREDUCE=1 "$hosts" -n 2 -s 2 ${rate:+-r $rate} run \
        sh -c "\$MPIRUN -n 4 $here/$build/bench/allreduce $args"
    st=$?
    [ "$st" = 77 ] && exit 0 # hosts.sh said why
    [ "$st" = 0 ] || exit "$st"
done
