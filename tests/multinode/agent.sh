#!/bin/sh
# agent.sh HOST COMMAND... — what ssh is to mpirun on a cluster, for the hosts of hosts.sh:
# Open MPI (--mca plm_rsh_agent) calls it as `agent.sh h2 orted ARGS...` to start its daemon on
# h2. It enters h2's namespace (network, hostname, local disk) and, like ssh, runs the command
# line through a shell with a clean login environment rather than mpirun's.
# Env: HOSTS_STATE (set by hosts.sh for everything it runs).
set -u
[ $# -ge 2 ] || { echo "agent.sh: usage: agent.sh HOST COMMAND..." >&2; exit 2; }
[ -n "${HOSTS_STATE:-}" ] || { echo "agent.sh: HOSTS_STATE is not set (run under hosts.sh)" >&2; exit 2; }
host=$1
shift
grep -qx "$(basename "$HOSTS_STATE")-$host" "$HOSTS_STATE/ns" 2>/dev/null ||
    { echo "agent.sh: no host '$host' in $HOSTS_STATE" >&2; exit 255; }
exec "$(dirname "$0")/hosts.sh" on "$HOSTS_STATE" "$host" \
    env -i PATH="$PATH" HOME="${HOME:-/}" USER="${USER:-$(id -un)}" LOGNAME="${LOGNAME:-$(id -un)}" \
    SHELL=/bin/sh LANG="${LANG:-C.UTF-8}" sh -c "$*"
