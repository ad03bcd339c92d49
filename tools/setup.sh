#!/bin/sh
# make setup: installs the Debian packages named as arguments when any is missing.
# A quick no-op when all are installed. As root it runs apt-get; otherwise it prints the command.
set -u
missing=""
for p in "$@"; do
    st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)
    [ "$st" = "install ok installed" ] || missing="$missing $p"
done
if [ -z "$missing" ]; then
    [ $# -eq 1 ] && echo "setup: $1 is present" || echo "setup: all $# packages present"
    exit 0
fi
cmd="apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" != 0 ]; then
    echo "setup: missing packages:$missing" >&2
    echo "setup: run: sudo apt-get update && sudo $cmd" >&2
    exit 1
fi
echo "setup: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq || { echo "setup: apt-get update failed" >&2; exit 1; }
# shellcheck disable=SC2086
apt-get install -y --no-install-recommends -qq $missing >/dev/null || {
    echo "setup: $cmd failed" >&2
    exit 1
}
echo "setup: installed$missing"
