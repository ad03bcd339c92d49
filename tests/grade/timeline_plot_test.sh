#!/bin/sh
# timeline_plot_test.sh — tools/timeline_plot.py on a real timeline: 2 ranks of the step-3
# solution write one (HVD_TIMELINE), the tool draws training step 3 as PNG and SVG. It must draw
# one row per gradient tensor, each with its three phases (NEGOTIATE_ALLREDUCE, ALLREDUCE and the
# SHM_ALLREDUCE, CMA_ALLREDUCE or MPI_ALLREDUCE nested in it), write real PNG/SVG files, and refuse a file that is not a trace
# with one line naming it; and do the same through the lab text's make timeline-image. Env: BUILD,
# MPIRUN (with flags). Ends with "timeline-plot: ok".
set -u
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build}
PY=/usr/bin/python3
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
bad() { echo "timeline-plot: FAIL: $*"; exit 1; }
HVD_TIMELINE=$t/t.json ${MPIRUN:-mpirun} -n 2 "$B/solutions/step03" --model wrn-10-1 \
    --train-subset 256 --test-subset 128 --batch-size 64 --epochs 1 >"$t/run.out" 2>&1 ||
    { cat "$t/run.out"; bad "the traced run failed"; }
rows=$(grep -o '"name": "DistributedOptimizer.grads/[^"]*"' "$t/t.json" | sort -u | wc -l)
[ "$rows" -gt 0 ] || bad "the timeline has no gradient tensors"
for ext in png svg; do
    said=$($PY tools/timeline_plot.py "$t/t.json" "$t/t.$ext" --step 3) || bad "exit $? on $ext"
    # the pass inside ALLREDUCE: the ranks of one host reduce through a shared window
    # (SHM_ALLREDUCE, coll/shm.c) or read each other's buffers (CMA_ALLREDUCE, coll/cma.c: the
    # fused gradients, on huge pages, from 128 KiB); across hosts it is the ring
    # (MPI_ALLREDUCE). Each kind the trace holds is counted; the tool lists them sorted.
    want=$( { echo "$rows ALLREDUCE"; echo "$rows NEGOTIATE_ALLREDUCE"
              for pass in SHM_ALLREDUCE CMA_ALLREDUCE MPI_ALLREDUCE; do
                  n=$(grep -o "\"name\": \"$pass\"" "$t/t.json" | wc -l)
                  [ "$n" -gt 0 ] && echo "$rows $pass nested"
              done; } | LC_ALL=C sort -k2 | paste -sd, - | sed 's/,/, /g')
    want="training step 3, $rows rows ($want)"
    case "$said" in *"$want"*) ;; *) bad "said \"$said\", expected \"$want\"" ;; esac
done
[ "$(head -c 4 "$t/t.png" | od -An -c | tr -d ' ')" = "211PNG" ] || bad "t.png is not a PNG"
# the lab text's command (chapters 0 and 3), its options through make: STEPS is its own, not the
# lab's list of steps (make once passed "--steps 01 02 ... 10" to the tool)
said=$(make --no-print-directory -s timeline-image TIMELINE="$t/t.json" OUT="$t/m.png" STEP=3 \
    ZOOM=1 2>&1) || bad "make timeline-image failed: $said"
case "$said" in *"training step 3's allreduces"*) ;; *) bad "make timeline-image said \"$said\"" ;; esac
[ -s "$t/m.png" ] || bad "make timeline-image wrote no $t/m.png"
grep -q "<svg" "$t/t.svg" || bad "t.svg is not an SVG"
echo "not json" >"$t/bad.json"
err=$($PY tools/timeline_plot.py "$t/bad.json" "$t/x.png" 2>&1) && bad "accepted $t/bad.json"
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && printf '%s' "$err" | grep -q "bad.json" ||
    bad "the error on a bad file is not one line naming it: $err"
echo "timeline-plot: ok ($rows gradient rows drawn with their 3 phases, PNG and SVG; a bad file refused: $err)"
