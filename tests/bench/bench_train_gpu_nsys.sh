#!/bin/sh
# bench_train_gpu_nsys.sh — tools/bench_train_gpu_nsys.sh (make bench-train-gpu-nsys) and
# tools/nsys_gpu_busy.py with a stand-in for nsys: its profile runs the bench's stand-in and
# records the options and HVDLAB_ACTIVATION_LAYOUT it got; its export writes an SQLite file with the
# tables of Nsight Systems' export schema that nsys_gpu_busy.py reads, holding known intervals:
# two steps; kernels on two streams that overlap, copies, a memset. Checked: the busy share is
# the union of the intervals (overlaps once), per step; the kernels' order and shares; the copies;
# both ways run; an export without kernels, a failing profile and a missing nsys each give their
# line and exit 1; found under NSYS_ROOTS, an nsys inside Nsight Compute comes last. Runs without a GPU: it checks the processing, not a measurement.
set -u
SCRIPT=${1:-tools/bench_train_gpu_nsys.sh}
TEST=bench_train_gpu_nsys
# shellcheck source=tests/bench/check.sh
. "$(dirname "$0")/check.sh"

# Intervals in ms (x 1e6 ns), 2 steps: conv [0,4) [10,14); bn [3,6) on another stream, overlapping
# conv by 1, and [14,17); copies [6,6.5) [17,17.5) of 1 MiB each; a memset [18,20). Span 20 ms,
# union 6.5 + 7.5 + 2 = 16 ms: a step spans 10 ms, busy 8 ms (80.0 %), idle 2 ms (the summed
# durations, 17 ms, would say 85 %).
cat >"$d/mkdb.py" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
empty = len(sys.argv) > 2 and sys.argv[2] == "empty"
db.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, streamId INT, "
           "demangledName INT, shortName INT)")
db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INT, end INT, bytes INT, copyKind INT)")
db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INT, end INT)")
db.executemany("INSERT INTO StringIds VALUES (?, ?)",
               [(1, "cudnn_conv_kernel"), (2, "bn_train_kernel"), (3, "unused")])
ms = lambda x: int(x * 1e6)
if not empty:
    for s, e, stream, name in [(0, 4, 7, 1), (3, 6, 8, 2), (10, 14, 7, 1), (14, 17, 8, 2)]:
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, 3, ?)",
                   (ms(s), ms(e), stream, name))
for s, e in [(6, 6.5), (17, 17.5)]:
    db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, ?, 1)", (ms(s), ms(e), 1 << 20))
db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?, ?)", (ms(18), ms(20)))
db.commit()
EOF
# nsys: "profile [options] -o OUT PROGRAM ARGS" writes OUT.nsys-rep and runs PROGRAM; "export
# [options] -o FILE REPORT" writes FILE. FAIL_LAYOUT=v fails the profile with that
# HVDLAB_ACTIVATION_LAYOUT (unset: "unset"); NO_IMPORT=1 records a capture but makes no report
# of it, as Nsight Compute's copy of nsys did on an H200.
cat >"$d/nsys" <<EOF
#!/bin/sh
cmd=\$1; shift
case \$cmd in
profile)
    echo "profile \$* HVDLAB_ACTIVATION_LAYOUT=\${HVDLAB_ACTIVATION_LAYOUT:-unset}" >>"$d/calls"
    [ "\${HVDLAB_ACTIVATION_LAYOUT:-unset}" = "\${FAIL_LAYOUT:-x}" ] &&
        { echo "nsys: the program failed"; exit 1; }
    while [ "\$1" != -o ]; do shift; done
    [ -n "\${NO_IMPORT:-}" ] && { : >"\$2.qdstrm"; echo "Importer error status"; exit 1; }
    echo "report" >"\$2.nsys-rep"; shift 2
    "\$@" ;;
export)
    while [ "\$1" != -o ]; do shift; done
    python3 "$d/mkdb.py" "\$2" \${EMPTY:-} ;;
esac
EOF
cat >"$d/kit" <<'EOF'
#!/bin/sh
echo "kit.$2.b$4.images_per_s 12345.6 images/s"
EOF
chmod +x "$d/nsys" "$d/kit"
export NSYS="$d/nsys" KIT="$d/kit" BENCH_DIR="$d/raw" STEPS=2

sh "$SCRIPT" >"$d/out" 2>&1
check "both ways: exit 0" $?
grep -q '^bench-train-gpu-nsys: wrn-16-4 batch 512, HVDLAB_ACTIVATION_LAYOUT=nchw: 2 steps; a step spans 10.00 ms on the GPU, busy 8.00 ms (80.0 %), idle 2.00 ms' "$d/out"
check "busy: the union of the intervals, per step" $?
grep -q '^bench-train-gpu-nsys: wrn-16-4 batch 512, as by default: kernels 2 a step, 7.00 ms summed (mean 3500.0 us each); memory copies 0.500 ms, 1.00 MiB a step$' "$d/out"
check "kernels and copies per step" $?
k1=$(grep -n 'as by default:.*4.000 ms  40.0 %    1x cudnn_conv_kernel$' "$d/out" | cut -d: -f1)
k2=$(grep -n 'as by default:.*3.000 ms  30.0 %    1x bn_train_kernel$' "$d/out" | cut -d: -f1)
[ -n "$k1" ] && [ -n "$k2" ] && [ "$k1" -lt "$k2" ]
check "the kernels, largest first, with shares of the span" $?
grep -q '^bench-train-gpu-nsys: wrn-16-4 batch 512, HVDLAB_ACTIVATION_LAYOUT=nchw: under nsys the bench measured 12345.6 images/s$' "$d/out"
check "the bench's own figure under nsys" $?
[ "$(grep -c -- '--capture-range=cudaProfilerApi --capture-range-end=stop' "$d/calls")" -eq 2 ] &&
    grep -q 'HVDLAB_ACTIVATION_LAYOUT=unset$' "$d/calls" &&
    grep -q 'HVDLAB_ACTIVATION_LAYOUT=nchw$' "$d/calls"
check "nsys records the profiler range, once per way" $?

FAIL_LAYOUT=unset sh "$SCRIPT" >"$d/out" 2>&1
[ $? -eq 1 ] && grep -q '^bench-train-gpu-nsys: wrn-16-4 batch 512, as by default: failed; the end of .*nsys_wrn-16-4_b512_default.log:$' "$d/out" &&
    grep -q '^  nsys: the program failed$' "$d/out" && grep -q 'HVDLAB_ACTIVATION_LAYOUT=nchw: 2 steps' "$d/out"
check "a failed profile: its line, its log's end, the next way still runs, exit 1" $?

NO_IMPORT=1 WAYS=default sh "$SCRIPT" >"$d/out" 2>&1
[ $? -eq 1 ] && grep -q "^bench-train-gpu-nsys: $d/nsys recorded .*nsys_wrn-16-4_b512_default.qdstrm but made no report from it (no importer beside it); NSYS=path names a whole Nsight Systems$" "$d/out"
check "a capture without a report: the line saying so, exit 1" $?

EMPTY=empty WAYS=default sh "$SCRIPT" >"$d/out" 2>&1
[ $? -eq 1 ] && grep -q 'as by default: no kernels in .*nsys_wrn-16-4_b512_default.sqlite' "$d/out"
check "an export without kernels: one line, exit 1" $?

NSYS=$d/none sh "$SCRIPT" >"$d/out" 2>&1
[ $? -eq 1 ] && [ "$(wc -l <"$d/out")" -eq 1 ] && grep -q '^bench-train-gpu-nsys: no nsys' "$d/out"
check "no nsys: one line, exit 1" $?

# Not named, not on PATH nor in the usual folders: found under NSYS_ROOTS, and said which
# (Nsight Compute's copy, which sorts after it, comes last)
mkdir -p "$d/roots/nsight-systems-2025.5.1/target-linux-x64" "$d/nocuda" \
    "$d/roots/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64"
cp "$d/nsys" "$d/roots/nsight-systems-2025.5.1/target-linux-x64/nsys"
cp "$d/nsys" "$d/roots/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys"
env -u NSYS PATH=/usr/bin:/bin CUDA_HOME="$d/nocuda" NSYS_ROOTS="$d/roots" \
    WAYS=HVDLAB_ACTIVATION_LAYOUT=nchw \
    sh "$SCRIPT" >"$d/out" 2>&1
[ $? -eq 0 ] && grep -qx "bench-train-gpu-nsys: $d/roots/nsight-systems-2025.5.1/target-linux-x64/nsys" "$d/out" &&
    grep -q 'HVDLAB_ACTIVATION_LAYOUT=nchw: 2 steps' "$d/out"
check "nsys found under NSYS_ROOTS" $?
env -u NSYS PATH=/usr/bin:/bin CUDA_HOME="$d/nocuda" NSYS_ROOTS="$d/nocuda" sh "$SCRIPT" >"$d/out" 2>&1
[ $? -eq 1 ] && [ "$(wc -l <"$d/out")" -eq 1 ] && grep -q "and under $d/nocuda; NSYS=path names it" "$d/out"
check "none anywhere: one line naming where it looked, exit 1" $?

python3 tools/nsys_gpu_busy.py "$d/none.sqlite" --steps 2 >"$d/out" 2>&1
[ $? -eq 1 ] && [ "$(wc -l <"$d/out")" -eq 1 ] && grep -q '^bench-train-gpu-nsys: .*none.sqlite: unable to open' "$d/out"
check "a missing export: one line naming it, exit 1" $?

finish
