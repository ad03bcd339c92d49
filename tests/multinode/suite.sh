#!/bin/sh
# suite.sh BUILD — the kit across hosts; run on h1 by `hosts.sh -n 2 -s 2 run` (make test-multinode),
# with MPIRUN, HOSTS_LOCAL, HOSTS_STATE, HOSTS_NS from hosts.sh. One line per check:
# "multinode: NAME: ok (what it saw)" or "multinode: NAME: FAILED (what was wrong)" and the output,
# then "multinode: N passed, N failed". Expects 2 hosts of 2 slots.
set -u
B=${1:-build}
pass=0
fail=0
out=$HOSTS_STATE/out
t_last=$(date +%s) # the suite's start
took() { echo "at $(($(date +%s) - t_last)) s"; }
ok() { pass=$((pass + 1)); echo "multinode: $1: ok ($2) [$(took)]"; }
bad() { fail=$((fail + 1)); echo "multinode: $1: FAILED ($2) [$(took)]"; sed 's/^/    /' "$out" | tail -25; }
ns_of() { echo "$HOSTS_NS" | tr ' ' '\n' | grep -- "-$1\$"; } # host -> namespace
rx_bytes() { ip -n "$(ns_of "$1")" -s link show eth0 | awk '/RX:/ { getline; print $1 }'; }
# Open MPI's rsh launcher warns when the agent has already exec'd before it can setpgid it.
quiet() { grep -v 'plm:rsh: Warning: setpgid' "$out" >"$out.q"; mv "$out.q" "$out"; }

# 1. Local rank and pinning: --map-by node deals ranks 0,2 to h1 and 1,3 to h2, so each host
#    has local ranks 0 and 1 of 2, and pins local rank L to core L of its 2. HVDLAB_REPORT_BINDINGS
#    reaches h2's ranks only if the launcher forwards it (hvdrun's -x).
HVDLAB_REPORT_BINDINGS=1 timeout 60 $MPIRUN --map-by node -n 4 "$B/tests/progs/prog_errors" pin \
    >"$out" 2>&1
quiet
got=$(grep '^hvdlab: rank' "$out" | sort | sed 's/ pinned to core \([0-9]\),.*/ core \1/' | tr '\n' ';')
want="hvdlab: rank 0 (local 0 of 2) core 0;hvdlab: rank 1 (local 0 of 2) core 0;hvdlab: rank 2 (local 1 of 2) core 1;hvdlab: rank 3 (local 1 of 2) core 1;"
if [ "$got" = "$want" ]; then
    ok local-rank "ranks 0-3 by node: local 0,0,1,1 of 2, pinned to core 0,0,1,1"
else
    bad local-rank "want local 0,0,1,1 of 2 on cores 0,0,1,1, got: $got"
fi

# 2. The MPI suites, whose values tell ranks apart, with ranks alternating between the hosts (so
#    every hop of the ring crosses the link), 2+2 and 2+1 on the hosts; test_collectives'
#    world_queries checks local rank and size against the host names. The link must have carried the 64 MiB allreduces.
rx0=$(rx_bytes h2)
for run in "--map-by node -n 4 test_collectives" "-n 4 test_fusion" \
    "--map-by node -n 4 test_distributed" "-n 3 test_metrics"; do
    name=${run##* }
    if timeout 120 $MPIRUN ${run% *} "$B/tests/mpi/$name" >"$out" 2>&1; then
        ok "$name ${run% *}" "$(grep -m1 'Checks:' "$out" | sed 's/.*Checks/Checks/')"
    else
        bad "$name ${run% *}" "exit $?"
    fi
done
mib=$((($(rx_bytes h2) - rx0) / 1048576))
if [ "$mib" -ge 256 ]; then
    ok link "h2's eth0 received $mib MiB during the suites"
else
    : >"$out"
    bad link "h2's eth0 received only $mib MiB: did the ranks talk over shared memory?"
fi

# 3. The collective check across hosts: rank 0 (h1) and rank 1 (h2) call different collectives.
start=$(date +%s)
HVD_CHECK_COLLECTIVES=1 timeout 60 $MPIRUN --map-by node -n 2 "$B/tests/progs/prog_errors" \
    mismatch-op >"$out" 2>&1
rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] &&
    grep -q 'collective mismatch: rank 0 called allreduce(name="a"' "$out"; then
    ok mismatch "exit $rc after $(($(date +%s) - start)) s: $(grep -m1 -o 'collective mismatch: rank 0 called allreduce[^:]*' "$out")"
else
    bad mismatch "exit $rc, want non-zero and the collective mismatch line"
fi
# ... and the setting that reaches only h1 because plain mpirun does not forward it (no -x): the
# agreement check must name it rather than let the ranks run with different fusion settings.
plain=$(echo "$MPIRUN" | sed 's|^[^ ]*/hvdrun |mpirun --allow-run-as-root --oversubscribe |')
HVD_FUSION_THRESHOLD=0 timeout 60 $plain --map-by node -n 2 "$B/tests/progs/prog_errors" \
    init-only >"$out" 2>&1
rc=$?
if [ "$rc" -ne 0 ] && grep -q 'setting mismatch: HVD_FUSION_THRESHOLD=0 on rank 0 but' "$out"; then
    ok env-not-forwarded "plain mpirun, exit $rc: $(grep -m1 -o 'setting mismatch: [^(]*' "$out")"
else
    bad env-not-forwarded "exit $rc, want the setting mismatch of HVD_FUSION_THRESHOLD"
fi

# 4. Solution 10 on 2 hosts x 2 ranks with checkpoints on the hosts' own disks ($HOSTS_LOCAL is
#    each host's own directory): rank 0 writes on h1 only; the 2-epoch run that resumes from
#    h1's checkpoint of epoch 1 must end with exactly the checkpoint of an uninterrupted 2-epoch
#    run, which it can only do if every rank on both hosts resumed with rank 0's state.
train="./solution10 --model wrn-10-1 --train-subset 512 --test-subset 256 --batch-size 64
       --val-batch-size 128 --warmup-epochs 1 --optimizer novograd --use-checkpointing"
d1=$HOSTS_STATE/disk/h1
d2=$HOSTS_STATE/disk/h2
#    The 2-host run must also end with the very bytes of the same 4 ranks on one host: the ring
#    sums in rank order wherever the ranks are (with the same environment on every rank, which
#    hvdrun's forwarding of OPENBLAS_* and the like gives). On one host the kit reduces through
#    a shared window instead (coll/shm.c, another order of the sums), so the one-host run is
#    told it has two hosts of two ranks (HVD_HOST_GROUP_SIZE=2, the test setting of
#    coll/allreduce.h), which makes it take the ring, as the 2-host run does.
HVD_HOST_GROUP_SIZE=2 timeout 120 "$PWD/hvdrun" -n 4 $train --epochs 2 --log-dir "$HOSTS_LOCAL/onehost" >"$out" 2>&1
if timeout 120 $MPIRUN --map-by node -n 4 $train --epochs 2 --log-dir "$HOSTS_LOCAL/whole" \
    >"$out" 2>&1 && grep -q '^Test accuracy' "$out" &&
    cmp -s "$d1/whole/checkpoint-2.ckpt" "$d1/onehost/checkpoint-2.ckpt"; then
    ok solution10 "2 hosts x 2 ranks, 2 epochs: $(grep '^Test accuracy' "$out"), checkpoint-2.ckpt identical to 4 ranks on one host's"
else
    bad solution10 "the run failed, or checkpoint-2.ckpt differs from one host's: $(cmp "$d1/whole/checkpoint-2.ckpt" "$d1/onehost/checkpoint-2.ckpt" 2>&1)"
fi
timeout 120 $MPIRUN --map-by node -n 4 $train --epochs 1 --log-dir "$HOSTS_LOCAL/ckpt" \
    >"$out" 2>&1 &&
    timeout 120 $MPIRUN --map-by node -n 4 $train --epochs 2 --log-dir "$HOSTS_LOCAL/ckpt" \
        >"$out" 2>&1
rc=$?
on_h2=$(find "$d2" -name '*.ckpt' | wc -l)
if [ "$rc" = 0 ] && grep -q '^Epoch 2/2' "$out" && ! grep -q '^Epoch 1/2' "$out" &&
    [ "$on_h2" = 0 ] && cmp -s "$d1/ckpt/checkpoint-2.ckpt" "$d1/whole/checkpoint-2.ckpt"; then
    ok resume "checkpoints on h1 only ($(ls "$d1/ckpt" | tr '\n' ' ')), none on h2; resumed at epoch 2, checkpoint-2.ckpt identical to the uninterrupted run's"
else
    bad resume "exit $rc; $on_h2 checkpoint files on h2; resumed == uninterrupted: $(cmp "$d1/ckpt/checkpoint-2.ckpt" "$d1/whole/checkpoint-2.ckpt" 2>&1 || true)"
fi

# 5. Step 7's grader with its two ranks on two hosts (MPIRUN is what the grader launches with).
#    Known limit of the grader (reported, tests/grade/ is not this suite's): its step-1 check
#    wants every rank on its own cores, but ranks on two hosts rightly both take core 0 of their
#    own host. So: step 07 and every other check must pass, and the only failure allowed is that
#    one of step 01.
MPIRUN="$MPIRUN --map-by node" timeout 300 "$B/tests/grade/grade_step07" "$B/solutions/step07" \
    >"$out" 2>&1
rc=$?
others=$(grep '\[FAIL\]' "$out" | grep -vc '\[FAIL\] step 01:')
if grep -q '\[PASS\] step 07:' "$out" && [ "$others" = 0 ] &&
    { [ "$rc" = 0 ] || grep -A1 '\[FAIL\] step 01:' "$out" | grep -q 'pinned to the same cores'; }; then
    ok grade07 "step 07 PASS with ranks 0 on h1 and 1 on h2$([ "$rc" = 0 ] ||
        echo "; step 01 fails only on its one-node rule: both ranks pinned to core 0 of their own hosts")"
else
    bad grade07 "exit $rc, step 07 or a check other than step 01's pinning failed"
fi

# 6. A rank on h2 killed mid-run: mpirun must end the whole job, within 10 s, naming it.
timeout 120 $MPIRUN --map-by node -n 4 $train --epochs 50 --log-dir "$HOSTS_LOCAL/kill" \
    >"$out" 2>&1 &
job=$!
i=0
while ! grep -q '^Epoch 1/' "$out" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
victim=
for p in $(ip netns pids "$(ns_of h2)"); do
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = solution10 ] && victim=$p && break
done
t0=$(date +%s.%N)
[ -n "$victim" ] && kill -KILL "$victim"
wait $job
rc=$?
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }') # bc is not on every machine
# mpirun names the signal when it sees the death first; when a survivor's own exit reaches it
# first (seen once, 2026-11-26) it reports that exit instead. Either way the job must end, and
# every survivor must name the dead rank in its own line (guard/watchdog.h): the two on h1 and
# the one left on h2.
msg=$(grep -m1 -o 'process rank [0-9]* with PID [0-9]* on node h2 exited on signal 9' "$out" ||
    grep -m1 -o 'Primary job  terminated normally, but 1 process returned' "$out")
named=$(grep -c "rank [0-9]* (pid $victim on h2) died: vanished without a word" "$out")
if [ -n "$victim" ] && [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ -n "$msg" ] && [ "$named" = 3 ] &&
    awk -v s="$secs" 'BEGIN { exit !(s < 10) }'; then
    ok kill "job ended $(printf %.1f "$secs") s after the kill, exit $rc: $msg; the 3 survivors name it"
else
    bad kill "victim '$victim', exit $rc after $(printf %.1f "$secs") s, message '$msg', named by $named of 3 survivors"
fi

echo "multinode: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
