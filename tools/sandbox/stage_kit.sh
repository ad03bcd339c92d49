#!/bin/sh
# tools/sandbox/stage_kit.sh KIT LIB DEST — the kit as the sandbox shows it (run.sh --kit DEST):
# KIT/common and LIB copied to DEST/common and DEST/build/libhvdlab.a, and KIT/datasets/fashion-mnist
# to DEST/datasets/fashion-mnist where the kit holds the data (run.sh mounts it at
# /kit/datasets/fashion-mnist), all readable by every user. The sandbox's programs run as an
# unprivileged uid, which may not reach the kit itself: a clone under /root or under a home
# folder of mode 0700 is closed to it, and every student's compile would fail. DEST's parent
# must let others through (mode 711 or more). About 5 MB without the data, once a class.
set -u
[ $# -eq 3 ] || { echo "usage: stage_kit.sh KIT LIB DEST" >&2; exit 2; }
kit=$1 lib=$2 dest=$3
[ -d "$kit/common" ] || { echo "stage_kit: $kit/common: not a folder" >&2; exit 2; }
[ -f "$lib" ] || { echo "stage_kit: $lib: no such library (make lib builds it)" >&2; exit 2; }
data=$kit/datasets/fashion-mnist
mkdir -p "$dest/build" && cp -R "$kit/common" "$dest/" && cp "$lib" "$dest/build/libhvdlab.a" &&
    { [ ! -d "$data" ] || { mkdir -p "$dest/datasets" && cp -R "$data" "$dest/datasets/"; }; } &&
    chmod -R a+rX,go-w "$dest" ||
    { echo "stage_kit: copying $kit/common and $lib to $dest failed" >&2; exit 1; }
