#!/bin/sh
# demo.sh — make demo: the lab's finished program (./solution10) on 2 ranks until the lab's target
# accuracy, then one line with the accuracy reached and the wall time.
#   MPIRUN="mpirun ..." sh tools/demo.sh [flags for solution10]
# The recipe (DEMO_RECIPE in the Makefile) and why: notebooks-md/README.md, "make demo".
set -u
MPIRUN=${MPIRUN:-mpirun}
log=${DEMO_LOG:-build/demo.log}
mkdir -p "$(dirname "$log")" || exit 1
start=$(date +%s.%N)
# shellcheck disable=SC2086  # MPIRUN is a command with its flags
{ $MPIRUN -n 2 ./solution10 "$@"; echo $? >"$log.rc"; } 2>&1 | tee "$log"
rc=$(cat "$log.rc")
wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
[ "$rc" = 0 ] || { echo "demo: solution10 exited $rc (log: $log)"; exit "$rc"; }
acc=$(sed -n 's/^Test accuracy: //p' "$log" | tail -n 1)
epochs=$(tr '\r' '\n' <"$log" | grep -c 'val_accuracy')
target=$(printf '%s\n' "$@" | awk 'p { t = $0; p = 0 } /^--target-accuracy$/ { p = 1 } END { print t }')
target=${target:-0.85}
if grep -q '^Early stopping after epoch' "$log"; then
    printf 'demo: test accuracy %s (target %s reached) after %d epoch(s), %.0f s wall on 2 ranks\n' \
        "$acc" "$target" "$epochs" "$wall"
else
    printf 'demo: test accuracy %s, target %s NOT reached in %d epoch(s), %.0f s wall on 2 ranks\n' \
        "$acc" "$target" "$epochs" "$wall"
fi
