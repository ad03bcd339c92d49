#!/bin/sh
# check_cuda_streams.sh — the runtime's GPU work stays on the streams it chose. The model runs on
# one non-blocking stream (nn/gpu_context.cu) and the collectives on it or on their own
# non-blocking one (coll_gpu/gpu_ops.c). A non-blocking stream does not wait for the legacy default
# stream, nor that stream for it. So a synchronous cudaMemcpy/cudaMemset, or a kernel launched
# without a stream, may run while the model's kernels still write the same buffer. No GPU is
# needed to see such a race coming: it is in the text. In common/ (.cu and .c), this flags:
#   - cudaMemcpy, cudaMemcpy2D, cudaMemset, cudaMemcpyToSymbol, cudaMemcpyFromSymbol (use the
#     ...Async form on the stream, then wait where the host needs the result);
#   - a kernel launch <<<grid, block[, shared]>>> without a stream (all four arguments are
#     required), or with stream 0, NULL, cudaStreamLegacy or cudaStreamPerThread;
#   - cudaStreamCreate( (a blocking stream; cudaStreamCreateWithFlags(.., cudaStreamNonBlocking));
#   - in coll/, coll_gpu/ and hvd/, cudaDeviceSynchronize, cudaStreamSynchronize,
#     cudaEventSynchronize: waits with no limit (a NCCL kernel whose peer died never
#     ends); the collectives wait through gpu_wait.h.
# Tests and benchmarks may use the default stream on purpose; they are not scanned.
# Prints each place with its rule and exits 1; else one summary line. Env: DIRS (default common).
set -u
cd "$(dirname "$0")/.." || exit 2
files=$(for d in ${DIRS:-common}; do ls "$d"/*/*.cu "$d"/*/*.c 2>/dev/null; done)
[ -n "$files" ] || { echo "check-cuda-streams: no files under ${DIRS:-common}"; exit 2; }
# awk: comments are dropped first (a comment may name the calls it avoids), then each launch's
# <<<...>>> is split at the commas outside parentheses.
# shellcheck disable=SC2086
awk '
    FNR == 1 { incomment = 0 }
    {
        line = $0
        out = ""
        while (line != "") {
            if (incomment) {
                e = index(line, "*/")
                if (!e) { line = ""; break }
                line = substr(line, e + 2)
                incomment = 0
                continue
            }
            s = index(line, "/*"); c = index(line, "//")
            if (c && (!s || c < s)) { out = out substr(line, 1, c - 1); line = ""; break }
            if (s) { out = out substr(line, 1, s - 1); line = substr(line, s + 2); incomment = 1; continue }
            out = out line
            line = ""
        }
        code = out
        if (match(code, /(^|[^A-Za-z0-9_])(cudaMemcpy|cudaMemcpy2D|cudaMemset|cudaMemcpyToSymbol|cudaMemcpyFromSymbol)[ \t]*\(/)) {
            call = substr(code, RSTART, RLENGTH)
            sub(/^[^A-Za-z_]/, "", call); sub(/[ \t]*\($/, "", call)
            printf "check-cuda-streams: %s:%d: %s runs on the legacy default stream, which the runtime'"'"'s non-blocking streams do not wait for: use %sAsync on the stream\n", FILENAME, FNR, call, call
            bad++
        }
        if (FILENAME ~ /\/(coll|coll_gpu|hvd)\// && match(code, /(^|[^A-Za-z0-9_])(cudaDeviceSynchronize|cudaStreamSynchronize|cudaEventSynchronize)[ \t]*\(/)) {
            call = substr(code, RSTART, RLENGTH)
            sub(/^[^A-Za-z_]/, "", call); sub(/[ \t]*\($/, "", call)
            printf "check-cuda-streams: %s:%d: %s waits with no limit: the collectives wait through gpu_wait (coll_gpu/gpu_wait.h), which polls with a deadline\n", FILENAME, FNR, call
            bad++
        }
        if (code ~ /cudaStreamCreate[ \t]*\(/) {
            printf "check-cuda-streams: %s:%d: cudaStreamCreate makes a blocking stream: use cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)\n", FILENAME, FNR
            bad++
        }
        rest = code
        while ((i = index(rest, "<<<")) > 0) {
            rest = substr(rest, i + 3)
            j = index(rest, ">>>")
            if (!j) {
                printf "check-cuda-streams: %s:%d: a launch whose <<< and >>> are on different lines: keep them on one\n", FILENAME, FNR
                bad++
                break
            }
            cfg = substr(rest, 1, j - 1)
            rest = substr(rest, j + 3)
            launches++
            depth = 0; nargs = 1; last = ""
            for (k = 1; k <= length(cfg); k++) {
                ch = substr(cfg, k, 1)
                if (ch == "(") depth++
                else if (ch == ")") depth--
                else if (ch == "," && depth == 0) { nargs++; last = ""; continue }
                last = last ch
            }
            gsub(/^[ \t]+|[ \t]+$/, "", last)
            if (nargs < 4) {
                printf "check-cuda-streams: %s:%d: <<<%s>>> has no stream: the kernel runs on the legacy default stream; give <<<grid, block, shared, stream>>>\n", FILENAME, FNR, cfg
                bad++
            } else if (last ~ /^(0|NULL|nullptr|cudaStreamLegacy|cudaStreamPerThread)$/) {
                printf "check-cuda-streams: %s:%d: <<<%s>>> launches on stream %s: use the model'"'"'s or the collectives'"'"' stream\n", FILENAME, FNR, cfg, last
                bad++
            }
        }
    }
    END {
        if (bad) exit 1
        printf "check-cuda-streams: ok (%d kernel launches, every one on a chosen stream; no synchronous copy or set; no unbounded wait in the collectives)\n", launches
    }
' $files
