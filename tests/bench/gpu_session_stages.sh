#!/bin/sh
# gpu_session_stages.sh — tools/gpu_session.sh with stand-ins for the GPU machine's commands
# (make, mpirun, nvidia-smi, python3, the CUDA build's programs) and for the clock (date +%s reads
# a file the stand-ins move on, so that a stage can run out of time without waiting for it): the
# archive holds every log a stage writes (gpu-memcheck's memcheck_<n>.log too), gpu-memcheck gets
# LIMIT=90, a later call skips what an earlier one finished, a stage that TIME_LIMIT cut part-way
# is left for a later call instead of being marked done, and no suite starts that could end past
# TIME_LIMIT. Runs without a GPU: it checks the script, not the kit.
set -u
SCRIPT=${1:-tools/gpu_session.sh}
SCRIPT=$(cd "$(dirname "$SCRIPT")" && pwd)/$(basename "$SCRIPT")
TEST=gpu_session_stages
# shellcheck source=tests/bench/check.sh
. "$(dirname "$0")/check.sh"

mkdir -p "$d/bin" "$d/root" "$d/outdir"
: >"$d/root/gpu-env.sh"
CLOCK=$d/clock CALLS=$d/calls
export CLOCK CALLS
# Sourced by a stand-in with name set: records the call and moves the clock on by $ADV_<name>
# seconds (1 when unset).
cat >"$d/advance" <<'EOF'
echo "$name $* | LIMIT=${LIMIT:-} STAGED=${HVDLAB_STAGED_REDUCE:-}" >>"$CALLS"
eval "adv=\${ADV_$(echo "$name" | tr -c 'A-Za-z0-9_\n' _):-1}"
echo $(($(cat "$CLOCK") + adv)) >"$CLOCK"
EOF
cat >"$d/bin/date" <<'EOF'
#!/bin/sh
[ "${1:-}" = +%s ] && exec cat "$CLOCK"
exec /bin/date "$@"
EOF
cat >"$d/bin/make" <<EOF
#!/bin/sh
for a; do t=\$a; done
name=make
. "$d/advance"
mkdir -p build/cuda
case \$t in
gpu-check)
    printf '%s\n' "build CUDA=1: ok, 0 compiler warning(s) [at 1 s]" \\
        "test_twins_cuda: exit 0, 100%: Checks: 9, Failures: 0, Errors: 0 [at 2 s]" \\
        "test_wrn_cuda: exit 0, 100%: Checks: 9, Failures: 0, Errors: 0 [at 3 s]" \\
        >build/cuda/gpu-check.summary
    cat build/cuda/gpu-check.summary ;;
gpu-memcheck)
    echo "========= ERROR SUMMARY: 0 errors" >build/cuda/memcheck_1.log
    echo "gpu-memcheck: training steps, as by default: clean" ;;
*) echo "\$t: a stand-in" ;;
esac
EOF
for p in nvidia-smi python3 mpirun; do
    printf '#!/bin/sh\nname=%s\n. "%s/advance"\necho "%s: a stand-in"\n' "$p" "$d" "$p" \
        >"$d/bin/$p"
done
mkdir -p "$d/root/build/cuda/tests/unit" "$d/root/build/cuda/tests/grade" \
    "$d/root/build/cuda/solutions" "$d/root/build/cuda/bench"
for p in tests/unit/test_wrn_cuda tests/grade/grade_step10 solutions/step10 \
    bench/train_speed_gpu; do
    n=$(basename "$p")
    printf '#!/bin/sh\nname=%s\n. "%s/advance"\necho "%s: a stand-in"\n' "$n" "$d" "$n" \
        >"$d/root/build/cuda/$p"
done
chmod +x "$d"/bin/* "$d"/root/build/cuda/*/* "$d"/root/build/cuda/tests/*/*
PATH=$d/bin:$PATH
export PATH

whole_call() { # TIME_LIMIT: the whole call, on the stand-ins' clock
    (cd "$d/root" && OUT="$d/outdir" bash "$SCRIPT") >"$d/out" 2>&1
}

echo 1000 >"$CLOCK"
: >"$CALLS"
whole_call
check "a whole call: exit 0" $?
grep -q '^== done at' "$d/out"
check "a whole call: to its end" $?
tar tzf "$d/outdir/gpu-logs.tgz" >"$d/list" 2>&1 &&
    grep -qx 'build/cuda/gpu-check.memcheck' "$d/list" &&
    grep -qx 'build/cuda/gpu-check.two.ipc' "$d/list"
check "the archive: the stages' logs" $?
grep -qx 'build/cuda/memcheck_1.log' "$d/list"
check "the archive: gpu-memcheck's own logs (its lines point to them)" $?
grep -q '^make .*gpu-memcheck | LIMIT=90 ' "$CALLS"
check "gpu-memcheck: LIMIT=90" $?
for s in gpu-check tta compilebf16 memcheck planted batch two layout switches nsys compile; do
    [ -e "$d/root/build/cuda/gpu-check.done.$s" ] || echo "no done marker: $s" >>"$d/out"
done
! grep -q 'no done marker' "$d/out"
check "every stage marked done" $?

: >"$CALLS"
whole_call
[ $? -eq 0 ] && grep -q '^== gpu-check: done by an earlier call' "$d/out" &&
    ! grep -qv '^nvidia-smi \|^python3 ' "$CALLS"
check "a later call: nothing run again" $?

# Only the two-ranks stage left, TIME_LIMIT=150: two runs of 40 s each, then 70 s left is not
# more than the 70 s a run needs; the stage is cut and a later call runs it again.
rm -f "$d/root/build/cuda/gpu-check.done.two"
: >"$CALLS"
(cd "$d/root" && TIME_LIMIT=150 ADV_mpirun=40 OUT="$d/outdir" bash "$SCRIPT") >"$d/out" 2>&1
[ "$(grep -c '^mpirun ' "$CALLS")" -eq 2 ] && [ ! -e "$d/root/build/cuda/gpu-check.done.two" ]
check "a stage TIME_LIMIT cut part-way: not marked done" $?
: >"$CALLS"
(cd "$d/root" && TIME_LIMIT=400 OUT="$d/outdir" bash "$SCRIPT") >"$d/out" 2>&1
[ "$(grep -c '^mpirun ' "$CALLS")" -eq 4 ] && [ -e "$d/root/build/cuda/gpu-check.done.two" ]
check "a stage TIME_LIMIT cut part-way: the next call runs it whole" $?

# The other ways' model suites (up to 95 s each): none starts with 100 s or less left, so the
# call ends inside TIME_LIMIT and a caller's own limit a little above it never cuts the archive.
rm -f "$d/root/build/cuda/gpu-check.done.batch"
: >"$CALLS"
(cd "$d/root" && TIME_LIMIT=160 ADV_test_wrn_cuda=50 OUT="$d/outdir" bash "$SCRIPT") >"$d/out" 2>&1
[ "$(grep -c '^test_wrn_cuda ' "$CALLS")" -eq 2 ] &&
    [ ! -e "$d/root/build/cuda/gpu-check.done.batch" ]
check "the model's suite each other way: none started past TIME_LIMIT" $?

finish
