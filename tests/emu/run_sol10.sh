#!/bin/sh
# run_sol10.sh EMU_SOL CPU_SOL — solution 10 trained by 2 ranks sharing the one emulated GPU
# (tests/emu), as gpu-check's "solution 10" stage trains it on a real GPU, in a few steps: the
# model on the GPU, its gradients averaged through the host-staged path, the weights broadcast.
# Each way runs the same short job twice, with the emulated GPU and with the CPU build, and
# checks from the HVDLAB_TRACE files:
#   - both ranks ran on the GPU (pin device=cuda) and staged through the host (rank 0's line);
#   - the model was built there: rank 0's gradients took a way only device tensors take (the
#     host buffer, MEMCPY_IN_HOST_BUFFER, or the GPUs' sum, STAGED_GPU_ALLREDUCE or
#     IPC_GPU_ALLREDUCE, in the HVD_TIMELINE file; a CPU model's take CMA or SHM alone);
#   - at every step both ranks applied the same averaged gradients and hold the same weights
#     (step grad_sum, param_sum), after the same broadcast (params sum);
#   - rank 0's loss at every step and the final val_loss are the CPU build's within 1 %: the
#     GPU path trains the same model, not merely the same on both ranks.
# Ways: as a 2-rank job on one GPU runs by default (the CPU adds the staged gradients, 0.7 MB),
# with HVDLAB_STAGED_REDUCE=gpu and HVD_COMPRESSION=fp16 (the GPUs add halves), and with
# HVDLAB_STAGED_REDUCE=ipc (the GPUs add, the window in GPU memory shared through CUDA IPC), and
# with rank 1 on the CPU (HVDLAB_DEVICE=cpu: a rank without a GPU; the CPU adds what rank 0
# stages and what rank 1 holds in its own memory, a job that hung before allreduce.c took the same
# path on both ranks).
# Ends with one line "sol10-emu: N passed, N failed". Env: MPIRUN, TEST_TIMEOUT (s, each job).
set -u
[ $# -eq 2 ] || { echo "usage: run_sol10.sh EMU_SOL CPU_SOL" >&2; exit 2; }
emu=$1
cpu=$2
mpirun=${MPIRUN:-mpirun --oversubscribe}
timeout_s=${TEST_TIMEOUT:-300}
dir=$(mktemp -d "${TMPDIR:-/tmp}/sol10-emu.XXXXXX")
trap 'rm -rf "$dir"' EXIT
flags="--epochs 1 --train-subset 256 --test-subset 128 --batch-size 32 --val-batch-size 64
       --warmup-epochs 0 --seed 7"

# fields FILE EVENT KEY...: for each line of EVENT, its KEY=value fields, space-separated
fields() {
    f=$1 ev=$2
    shift 2
    awk -v ev="event=$ev" -v keys="$*" '
        $1 == ev { out = ""; n = split(keys, k, " ")
                   for (j = 1; j <= n; j++) for (i = 2; i <= NF; i++)
                       if (index($i, k[j] "=") == 1) out = out " " substr($i, length(k[j]) + 2)
                   print substr(out, 2) }' "$f"
}

# check WHAT: one failed expectation of this way
fails=0
check() { echo "FAIL: $label: $1"; fails=$((fails + 1)); }

pass=0
fail=0
for opt in "" "HVDLAB_STAGED_REDUCE=gpu HVD_COMPRESSION=fp16" "HVDLAB_STAGED_REDUCE=ipc" mixed
do
    label="solution 10, 2 ranks on the emulated GPU${opt:+, $opt}"
    mixed=0
    if [ "$opt" = mixed ]; then
        mixed=1 opt=
        label="solution 10, rank 0 on the emulated GPU, rank 1 on the CPU (HVDLAB_DEVICE=cpu)"
    fi
    echo "== $label"
    fails=0
    for build in emu cpu; do
        bin=$emu
        [ $build = cpu ] && bin=$cpu
        rm -rf "${dir:?}/$build" && mkdir -p "$dir/$build/trace"
        set -- -n 2 "$bin"
        # shellcheck disable=SC2086 # a word list
        [ $mixed = 1 ] && set -- -n 1 "$bin" $flags --log-dir "$dir/$build/logs" : \
            -n 1 env HVDLAB_DEVICE=cpu "$bin"
        # shellcheck disable=SC2086 # flags and the launcher are word lists
        env $opt HVDLAB_TRACE="$dir/$build/trace" HVD_TIMELINE="$dir/$build/timeline.json" \
            timeout "$timeout_s" $mpirun "$@" $flags --log-dir "$dir/$build/logs" \
            >"$dir/$build/out" 2>&1
        rc=$?
        [ $rc = 0 ] || { check "the $build build's job exited $rc"; tail -5 "$dir/$build/out"; }
    done
    t0=$dir/emu/trace/rank-0.log
    t1=$dir/emu/trace/rank-1.log
    if [ -f "$t0" ] && [ -f "$t1" ]; then
        for t in "$t0" "$t1"; do
            want=cuda
            [ $mixed = 1 ] && [ "$t" = "$t1" ] && want=cpu
            grep -q "event=pin .*device=$want" "$t" ||
                check "$(basename "$t"): not pinned to the $want device"
        done
        # a model built on the CPU would pass every other check here (its losses are the CPU's)
        grep -Eq '"name": "(MEMCPY_IN_HOST_BUFFER|STAGED_GPU_ALLREDUCE|IPC_GPU_ALLREDUCE)"' \
            "$dir/emu/timeline.json" ||
            check "rank 0's gradients never took a device tensor's way: its model is not on the GPU"
        grep -q 'GPU collectives: host-staged' "$dir/emu/out" ||
            check "rank 0 does not say the gradients go host-staged"
        [ $mixed = 0 ] || grep -q 'host-staged through MPI (rank 1 has no GPU)' "$dir/emu/out" ||
            check "rank 0 does not say rank 1 has no GPU"
        case $opt in *STAGED_REDUCE=gpu*)
            grep -q 'HVDLAB_STAGED_REDUCE=gpu: summed on the GPUs' "$dir/emu/out" ||
                check "rank 0 does not say the GPUs add" ;;
        *STAGED_REDUCE=ipc*)
            grep -q 'HVDLAB_STAGED_REDUCE=ipc: summed on the GPUs, their window shared by CUDA IPC' \
                "$dir/emu/out" || check "rank 0 does not say the GPUs add through CUDA IPC"
            # the emulator refuses CUDA IPC only without its guard (an ASan build): then the
            # host's window serves, as on a GPU that refuses it
            if grep -q "the host's shared window serves instead" "$dir/emu/out"; then
                if grep -q "cudaIpcGetMemHandle failed (operation not supported)" "$dir/emu/out"
                then echo "note: CUDA IPC refused (the emulator without its guard)"
                else check "CUDA IPC refused: $(grep -m1 'serves instead' "$dir/emu/out")"
                fi
            fi ;;
        esac
        [ "$(fields "$t0" params sum)" = "$(fields "$t1" params sum)" ] ||
            check "the ranks' weights differ after the broadcast"
        fields "$t0" step iter grad_sum param_sum >"$dir/s0"
        fields "$t1" step iter grad_sum param_sum >"$dir/s1"
        steps=$(grep -c . "$dir/s0")
        [ "$steps" -ge 4 ] || check "$steps steps, want 4"
        cmp -s "$dir/s0" "$dir/s1" ||
            check "the ranks' averaged gradients or weights differ at some step"
        # rank 0's loss at every step, then the final val_loss: the GPU's against the CPU's
        for build in emu cpu; do
            { fields "$dir/$build/trace/rank-0.log" train_batch loss
              grep 'when=epoch' "$dir/$build/trace/rank-0.log" | tr ' ' '\n' |
                  sed -n 's/^val_loss=//p'; } >"$dir/loss.$build"
        done
        far=$(paste "$dir/loss.emu" "$dir/loss.cpu" | awk '
            { n++; d = $1 - $2; if (d < 0) d = -d; s = $2 < 0 ? -$2 : $2
              if (!(d <= 0.01 * s) && !bad) bad = sprintf("value %d: %s, the CPU %s", n, $1, $2) }
            END { print bad ? bad : n < 5 ? "only " n " losses" : "" }')
        [ -z "$far" ] || check "losses not the CPU build's within 1 %: $far"
    else
        check "no trace files from the emulated job"
    fi
    if [ $fails = 0 ]; then
        echo "ok: $steps steps; the same gradients and weights on both ranks at every step;" \
             "losses the CPU build's within 1 %"
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
    fi
done
echo "sol10-emu: $pass passed, $fail failed"
[ $fail = 0 ]
