/* wrn_layout.c — which layout a model keeps its activations in, chosen once in wrn_create: on the
 * CPU NCHW or oneDNN's nChw16c (nn/blocked16.h), on a GPU NCHW or NHWC.
 * Public: wrn_activation_layout (wrn.h); wrn_layout_blocked, wrn_layout_nhwc (wrn_internal.h).
 *
 * Why: oneDNN's AVX-512 convolutions read and write nChw16c; with NCHW activations every conv
 * call reorders its input and output (and their gradients) in and out of it (conv2d_dnnl.c),
 * about 12 ms of a 110 ms wrn-16-1 step (docs/benchmarks.md, "Where a wrn-16-1 step goes").
 * Blocked, only the weights are reordered.
 *
 * HVDLAB_ACTIVATION_LAYOUT: auto (default): nChw16c where it saves every activation reorder —
 * the dnnl backend and oneDNN preferring nChw16c for every conv of the model (its AVX-512
 * kernels; on AVX2 it wants nChw8c and the model stays NCHW); nchw: NCHW always (the layout
 * before this choice existed); nChw16c: blocked on the dnnl backend even where oneDNN prefers
 * another layout (it then reorders, for tests). Another value: a warning, then auto.
 *
 * A GPU model: auto and nhwc give NHWC, where cuDNN's convolutions take NHWC tensors and NHWC
 * (KRSC) filters (nn/conv2d_cudnn.cu), and batch norm and the pools have NHWC kernels; nchw gives
 * NCHW. Why NHWC by default: on an H200 (2026-11-27, tools/gpu_session.sh's switches stage, each
 * way twice, interleaved) a whole training step in NHWC with the bias folded into batch norm
 * (wrn_place.c) ran 1.02-1.21x NCHW's best (the fold and batched loads) at every row of
 * bench-train-gpu (wrn-16-4 and wrn-16-10, batch 128 and 512). Without the fold NHWC lost
 * (0.82-0.95x NCHW): the convolutions' own bias gradients are slow in NHWC. nChw16c on a GPU
 * model, or nhwc on a CPU one: a warning, then auto.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fatal.h"
#include "model/wrn_internal.h"
#include "nn/conv2d.h"
#ifdef HVDLAB_DNNL
#include "nn/conv2d_dnnl.h"
#endif

enum { WANT_AUTO, WANT_NCHW, WANT_BLOCKED, WANT_NHWC };

static int wanted(void)
{
    const char *e = getenv("HVDLAB_ACTIVATION_LAYOUT");
    if (!e || !*e || strcmp(e, "auto") == 0)
        return WANT_AUTO;
    if (strcmp(e, "nchw") == 0)
        return WANT_NCHW;
    if (strcmp(e, "nChw16c") == 0)
        return WANT_BLOCKED;
    if (strcmp(e, "nhwc") == 0)
        return WANT_NHWC;
    /* rank 0 says it: the value is the launcher's on every rank */
    fatal_warn(FATAL_ONCE_PER_JOB, "HVDLAB_ACTIVATION_LAYOUT=%s is not auto, nchw, nChw16c or "
               "nhwc; using auto", e);
    return WANT_AUTO;
}

/* The layout asked for that this model's device does not have: one warning, then auto. Once
 * per host, not per job: whether a rank's model is on a GPU follows its host (a host without a
 * GPU runs a CUDA build's ranks on the CPU), so another host may need the line where rank 0's
 * does not. */
static int other_device(const char *want, const char *device)
{
    fatal_warn(FATAL_ONCE_PER_HOST, "HVDLAB_ACTIVATION_LAYOUT=%s is not for a model on %s; "
               "using auto", want, device);
    return WANT_AUTO;
}

#ifdef HVDLAB_DNNL
/* oneDNN's kernels take every conv of the model (block convs: 16K·2^g channels in and out;
 * the stem's output too) in nChw16c. */
static int all_prefer_blocked(const wrn_model *m)
{
    const int per = m->per_group, K = m->cfg.width;
    for (int b = 0; b < m->nblocks; b++) {
        const int g = b / per, hw = WRN_IMG >> g, cout = (16 << g) * K;
        const int cin = b == 0 ? WRN_STEM : b % per == 0 ? (8 << g) * K : cout;
        const conv2d_dims c1 = {.n = 1, .cin = cin, .h = hw, .w = hw, .cout = cout, .k = 3};
        const conv2d_dims c2 = {.n = 1, .cin = cout, .h = hw, .w = hw, .cout = cout, .k = 3};
        const conv2d_dims sc = {.n = 1, .cin = cin, .h = hw, .w = hw, .cout = cout, .k = 1};
        if (!conv2d_dnnl_prefers_nchw16c(&c1) || !conv2d_dnnl_prefers_nchw16c(&c2) ||
            (cin != cout && !conv2d_dnnl_prefers_nchw16c(&sc)))
            return 0;
    }
    return 1;
}
#endif

int wrn_layout_blocked(const wrn_model *m)
{
    int want = wanted();
    if (want == WANT_NHWC)
        want = other_device("nhwc", "the CPU");
    if (want == WANT_NCHW)
        return 0;
    const int dnnl = strcmp(conv2d_backend(), "dnnl") == 0;
    if (want == WANT_BLOCKED) {
        if (!dnnl)
            fatal_error("HVDLAB_ACTIVATION_LAYOUT=nChw16c needs the dnnl convolution backend, "
                        "not %s", conv2d_backend());
        return 1;
    }
#ifdef HVDLAB_DNNL
    return dnnl && all_prefer_blocked(m);
#else
    (void)m;
    return 0;
#endif
}

int wrn_layout_nhwc(void)
{
    int want = wanted();
    if (want == WANT_BLOCKED)
        want = other_device("nChw16c", "a GPU");
    return want != WANT_NCHW;
}

const char *wrn_activation_layout(const wrn_model *m)
{
    return m->blocked ? "nChw16c" : m->nhwc ? "nhwc" : "nchw";
}
