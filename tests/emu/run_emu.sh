#!/bin/sh
# run_emu.sh WRN — make test-emu-model's runs of the emulated GPU model's suite: as the CUDA build
# trains by default, then with each GPU opt-in that changes the model's path (tools/gpu_session.sh's
# "batch" stage runs the same on a GPU). Ends with one line "emu: N passed, N failed".
# Env: TEST_TIMEOUT (s, each run).
set -u
[ $# -eq 1 ] || { echo "usage: run_emu.sh WRN" >&2; exit 2; }
timeout_s=${TEST_TIMEOUT:-900}
pass=0
fail=0
failed=""
# by default NHWC with the bias folded into batch norm; then NCHW (batched loads are NCHW's only),
# the way without the fold in each layout
for opt in "" HVDLAB_BIAS_IN_BN=0 "HVDLAB_ACTIVATION_LAYOUT=nchw HVDLAB_BN_BATCH=1" \
    "HVDLAB_ACTIVATION_LAYOUT=nchw HVDLAB_BIAS_IN_BN=0"; do
    label="$(basename "$1")${opt:+ $opt}"
    echo "== $label"
    # shellcheck disable=SC2086 # opt: one word a variable
    if timeout "$timeout_s" env $opt "$1"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        failed="$failed, $label"
    fi
done
echo "emu: $pass passed, $fail failed${failed:+ (${failed#, })}"
[ "$fail" = 0 ]
