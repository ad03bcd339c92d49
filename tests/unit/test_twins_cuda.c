/* test_twins_cuda.c — every GPU twin of nn/ (conv2d_cudnn, bn_cuda, act_cuda, pool_cuda,
 * dense_cuda, xent_cuda) against its CPU original on the same random data; and the loss
 * scaler's unscale (optim_cuda) against optim/loss_scale.c's.
 *
 * Needs a CUDA build and a visible GPU. Without a GPU — cudaGetDeviceCount finds none, or there is
 * no NVIDIA driver and no /dev/nvidia* device node (the toolkit alone on a CPU machine) — it
 * prints one line "skipped: no GPU (reason)" and exits 77, which tests/run_unit.sh counts as
 * skipped, never as passed. Any other CUDA error (a driver too old for the runtime on a machine
 * with a GPU, a broken install) prints "FAILED: a GPU is present but CUDA cannot use it (reason)"
 * and exits 1.
 *
 * Built again with HVDLAB_CUDA_EMU (make test-emu, tests/emu/) it needs no GPU: the kernels of
 * bn, act, pool and xent run on the CPU under the emulator, in the same cases against the same
 * CPU layers. The convolution and dense cases are left out there (cuDNN, cuBLAS).
 *
 * TF32 is off (gpu_context_set_tf32(0)): cuDNN and cuBLAS then do fp32 FMA arithmetic, and a
 * result differs from the CPU's only by the order of its float additions. The CPU convolutions
 * are pinned to oneDNN's direct algorithm (conv2d_dnnl_set_algo("direct")): the default, auto,
 * runs Winograd on 3x3 layers with 32+ input channels; its worst error against a double
 * reference is ~4e-6 of the scale, like direct's (test_conv_backends.c), so either fits 1e-4,
 * but direct is the plainest sum and the reference test_wrn_cuda.c uses too. Nothing here uses
 * the nChw16c layout: these are the NCHW layers. The GPU twins of batch norm, the pools and the
 * convolutions also run on NHWC activations (a GPU model's, by default):
 * their inputs transposed on the way up, their outputs on the way back (nhwc_act), against the
 * same NCHW CPU layers with the same tolerances. Tolerances are stated
 * relative to each tensor's scale, its largest magnitude on the CPU:
 *   max |gpu − cpu| <= tol · max |cpu|
 * with tol 1e-4 for the convolutions and dense (sums of up to ~20,000 products), 1e-5 for batch
 * norm and the softmax. A wrong index, layout or missing += is off by O(1) of the scale.
 * Exactly equal (bit for bit): ReLU, dropout (the masks), max-pool, GAP, the bias gradient of
 * dense, the softmax gradient and the correct count — the twins do the CPU's float operations
 * in the CPU's order (nvcc --fmad=false) — and the fused BN + ReLU + dropout where batch norm's
 * output is 1 exactly (gamma 0, beta 1), so the output is the dropout mask itself.
 * Backward "+=" outputs start from random values on both sides, "=" outputs from different
 * ones; both must come out the same. Forward outputs (which overwrite) start as NaN on the GPU
 * (poison), so a twin that adds to its output instead fails.
 * Sizes: each elementwise kernel runs at least once on a tensor larger than its grid
 * (gpu_blocks: 4096 blocks of 256 threads = 2^20), so the grid-stride loops go round again.
 * Batch norm runs on inputs spread over U(2, 4) (the M/(M−1) correction shows in small
 * channels) and over U(2, 2.01), whose variance (~1e-5) is of the order of eps: there
 * 1/sqrt(var + eps) differs clearly from any other placement of eps.
 *
 * Convolution shapes: every conv of wrn-16-1 and wrn-16-4 (stem, 3x3 and 1x1 shortcuts of the
 * three groups at 28x28, 14x14, 7x7) at batch 8, of wrn-16-10 at batch 4 (up to 640 channels: a
 * CPU reference of ~40 GFLOP at batch 8, half that at 4), forward with the caller's workspace,
 * backward with the shared one (work = NULL), and one without bias; wrn-16-4's again with the
 * bias gradient by cuBLAS (HVDLAB_BIAS_GRAD_CUBLAS=1). Each case names the algorithms cuDNN was
 * given (conv2d_cudnn_algos), and prints them.
 */
#include <stdio.h>
#include <stdlib.h>

#include "lib/gpu_skip.h"

#ifdef HVDLAB_CUDA

#include <cuda_runtime_api.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "lib/ck_mpi.h"
#include "lib/fill.h"
#include "lib/nhwc.h"
#include "nn/act.h"
#include "nn/bn.h"
#include "nn/conv2d.h"
#ifdef HVDLAB_DNNL
#include "nn/conv2d_dnnl.h"
#endif
#include "nn/dense.h"
#include "nn/gpu_context.h"
#include "nn/layer_math.h"
#include "nn/pool.h"
#include "nn/xent.h"
#include "optim/loss_scale.h"
#include "optim/optim_cuda.h"

static uint64_t rng = 20240917;

static float *randf(size_t n, float lo, float hi) { return rand_floats(&rng, n, lo, hi); }

static float *copyf(const float *a, size_t n)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    memcpy(x, a, n * sizeof *x);
    return x;
}

static float *up(const float *h, size_t n)
{
    float *d = gpu_context_alloc(n * sizeof *d);
    gpu_context_upload(d, h, n * sizeof *d);
    return d;
}

static float *down(const float *d, size_t n)
{
    float *h = malloc((n ? n : 1) * sizeof *h);
    gpu_context_download(h, d, n * sizeof *h);
    return h;
}

/* n floats of NaN (all bits set) at the device pointer d: what a forward must overwrite. */
static void poison(float *d, size_t n)
{
    unsigned char *h = malloc(n ? n * sizeof(float) : 1);
    memset(h, 0xFF, n * sizeof(float));
    gpu_context_upload(d, h, n * sizeof(float));
    free(h);
}

/* max |got − ref| / max |ref| (the absolute error when ref is all zeros). */
static double rel_err(const float *got, const float *ref, size_t n)
{
    double e = 0.0, scale = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)got[i] - ref[i]);
        e = d > e || d != d ? d : e;
        scale = fabs(ref[i]) > scale ? fabs(ref[i]) : scale;
    }
    return scale > 0.0 ? e / scale : e;
}

/* got (the GPU's, on the host) against the CPU's ref: within tol of ref's scale, or (tol < 0)
 * the same bits. Frees got. */
static void expect_host(const char *what, float *got, const float *ref, size_t n, double tol)
{
    if (tol < 0.0) {
        size_t i = 0;
        while (i < n && memcmp(&got[i], &ref[i], sizeof *ref) == 0)
            i++;
        CK_EXPECT(i == n, "%s: element %zu of %zu is %.9g on the GPU, %.9g on the CPU", what, i,
                  n, i < n ? got[i] : 0.0f, i < n ? ref[i] : 0.0f);
    } else {
        const double e = rel_err(got, ref, n);
        CK_EXPECT(e <= tol, "%s: GPU is %.3g of the scale off the CPU (tolerance %.1g)", what, e,
                  tol);
    }
    free(got);
}

/* The device tensor dev against the CPU's ref (expect_host). */
static void expect(const char *what, const float *dev, const float *ref, size_t n, double tol)
{
    expect_host(what, down(dev, n), ref, n, tol);
}
#define EXACT (-1.0)

/* ---- activations in either layout ----------------------------------------------------------
 * The CPU layers take NCHW. With nhwc_act set, the cases below give the GPU twins their
 * activations in NHWC (bn_dims, pool_dims and conv2d_dims .nhwc, as a GPU model
 * does by default): an (N, C, HW) tensor goes up transposed (upa, uploada)
 * and comes back transposed before it is compared (expecta), so every comparison is the NCHW
 * one. Per-channel vectors and weights have no layout. */
static int nhwc_act;

/* NCHW -> NHWC (to_nhwc 1) or back, of nt floats with c channels of hw pixels, into a new
 * buffer. */
static float *transposed(const float *a, size_t nt, int c, int hw, int to_nhwc)
{
    float *t = malloc((nt ? nt : 1) * sizeof *t);
    nhwc_transpose(t, a, nt, (size_t)c, (size_t)hw, to_nhwc);
    return t;
}

/* The NCHW host tensor h into device memory d, in the layout the cases give the twins. */
static void uploada(float *d, const float *h, size_t nt, int c, int hw)
{
    float *t = nhwc_act ? transposed(h, nt, c, hw, 1) : copyf(h, nt);
    gpu_context_upload(d, t, nt * sizeof *t);
    free(t);
}

static float *upa(const float *h, size_t nt, int c, int hw)
{
    float *d = gpu_context_alloc(nt * sizeof *d);
    uploada(d, h, nt, c, hw);
    return d;
}

/* expect for an activation tensor in the cases' layout. */
static void expecta(const char *what, const float *dev, const float *ref, size_t nt, int c,
                    int hw, double tol)
{
    float *got = down(dev, nt);
    if (nhwc_act) {
        float *t = transposed(got, nt, c, hw, 0);
        free(got);
        got = t;
    }
    expect_host(what, got, ref, nt, tol);
}

/* ---- convolution --------------------------------------------------------------------------- */
#ifndef HVDLAB_CUDA_EMU /* cuDNN: not in the CPU emulator (the top) */

static void conv_case(int n, int cin, int hw, int cout, int k, int bias)
{
    const conv2d_dims d = {
        .n = n, .cin = cin, .h = hw, .w = hw, .cout = cout, .k = k, .nhwc = nhwc_act};
    const size_t ni = (size_t)n * cin * hw * hw, no = (size_t)n * cout * hw * hw,
                 nw = (size_t)cout * cin * k * k;
    char what[512], shape[64], algos[256];
    float *in = randf(ni, -1, 1), *w = randf(nw, -0.5f, 0.5f), *b = randf((size_t)cout, -1, 1);
    float *dout = randf(no, -1, 1), *din = randf(ni, -1, 1), *dw = randf(nw, -1, 1),
          *db = randf((size_t)cout, -1, 1);
    const int px = hw * hw;
    float *d_in = upa(in, ni, cin, px), *d_w = up(w, nw), *d_b = up(b, (size_t)cout),
          *d_dout = upa(dout, no, cout, px);
    float *d_din = upa(din, ni, cin, px), *d_dw = up(dw, nw), *d_db = up(db, (size_t)cout);
    float *d_out = gpu_context_alloc(no * sizeof(float));
    float *work = malloc(conv2d_work_floats(&d) * sizeof *work + 1);
    float *out = malloc(no * sizeof *out);
    const size_t work_floats = conv2d_cudnn_work_floats(&d);
    float *d_work = gpu_context_alloc(work_floats * sizeof(float));
    /* the bias gradient: cuBLAS by default, cuDNN's with HVDLAB_BIAS_GRAD_CUBLAS=0; NHWC: batch
     * norm's channel sums either way */
    const char *cublas_bias = getenv("HVDLAB_BIAS_GRAD_CUBLAS");
    snprintf(shape, sizeof shape, "conv %dx%d %d->%d %dx%d%s%s%s", k, k, cin, cout, hw, hw,
             nhwc_act ? " NHWC" : "", bias ? "" : " (no bias)",
             bias && !nhwc_act && cublas_bias && !strcmp(cublas_bias, "0")
                 ? " (bias gradient by cuDNN)"
                 : "");
    conv2d_cudnn_algos(&d, algos, sizeof algos);
    printf("%s: %s\n", shape, algos);
#define WHAT(s) (snprintf(what, sizeof what, "%s %s [%s]", shape, s, algos), what)

    conv2d_forward(out, in, w, bias ? b : NULL, &d, work);
    poison(d_out, no);
    conv2d_cudnn_forward(d_out, d_in, d_w, bias ? d_b : NULL, &d, d_work, work_floats);
    expecta(WHAT("forward"), d_out, out, no, cout, px, 1e-4);

    /* The stem's input gradient is never needed (the model passes NULL). */
    const int with_din = cin > 1;
    conv2d_backward(with_din ? din : NULL, dw, bias ? db : NULL, dout, in, w, &d, work);
    conv2d_cudnn_backward(with_din ? d_din : NULL, d_dw, bias ? d_db : NULL, d_dout, d_in, d_w,
                          &d, NULL, 0);
    expecta(WHAT("din +="), d_din, din, ni, cin, px, 1e-4);
    expect(WHAT("dw +="), d_dw, dw, nw, 1e-4);
    expect(WHAT("db +="), d_db, db, (size_t)cout, 1e-4);
    if (with_din) { /* din =: what was there (NaN here) is neither added nor read */
        conv2d_backward_set(din, dw, bias ? db : NULL, dout, in, w, &d, work);
        poison(d_din, ni);
        conv2d_cudnn_backward_set(d_din, d_dw, bias ? d_db : NULL, d_dout, d_in, d_w, &d, NULL,
                                  0);
        expecta(WHAT("din ="), d_din, din, ni, cin, px, 1e-4);
        expect(WHAT("dw += after din ="), d_dw, dw, nw, 1e-4);
    }
#undef WHAT

    float *bufs[] = {in, w, b, dout, din, dw, db, work, out};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        free(bufs[i]);
    float *dbufs[] = {d_in, d_w, d_b, d_dout, d_din, d_dw, d_db, d_out, d_work};
    for (size_t i = 0; i < sizeof dbufs / sizeof *dbufs; i++)
        gpu_context_free(dbufs[i]);
}

/* Every convolution of wrn-16-K (common/model/wrn_build.c: stem 1->16 at 28x28, then three
 * groups of two blocks, widths 16K, 32K, 64K at 28, 14, 7 pixels; a 1x1 shortcut where the
 * width changes). */
static void wrn16_convs(int K, int n)
{
    conv_case(n, 1, 28, 16, 3, 1);
    int cin = 16;
    for (int g = 0; g < 3; g++) {
        const int cout = (16 << g) * K, hw = 28 >> g;
        if (cin != cout)
            conv_case(n, cin, hw, cout, 1, 1);
        conv_case(n, cin, hw, cout, 3, 1);
        conv_case(n, cout, hw, cout, 3, 1);
        cin = cout;
    }
}

START_TEST(conv_matches_cpu)
{
    wrn16_convs(1, 8);
    wrn16_convs(4, 8);
    wrn16_convs(10, 4);
    conv_case(8, 16, 14, 32, 3, 0); /* b = NULL: forward writes the convolution alone */
    CK_AGREE();
}
END_TEST

/* HVDLAB_BIAS_GRAD_CUBLAS=0: the bias gradient by cuDNN's backward bias instead of two cuBLAS
 * products, on every conv shape of wrn-16-4 (new plans: the switch is read at the first one). */
START_TEST(conv_bias_grad_cudnn_matches_cpu)
{
    setenv("HVDLAB_BIAS_GRAD_CUBLAS", "0", 1);
    conv2d_cudnn_release();
    wrn16_convs(4, 8);
    unsetenv("HVDLAB_BIAS_GRAD_CUBLAS");
    conv2d_cudnn_release();
    CK_AGREE();
}
END_TEST

/* NHWC activations (a GPU model's by default): cuDNN's NHWC convolutions with KRSC filters made
 * from the KCRS weights, the filter gradient added back in KCRS, the bias gradient by batch
 * norm's NHWC channel sums; every conv of wrn-16-1, wrn-16-4 and wrn-16-10 (at batch 2: up to
 * 640 channels), and without bias. */
START_TEST(conv_nhwc_matches_cpu)
{
    nhwc_act = 1;
    wrn16_convs(1, 8);
    wrn16_convs(4, 8);
    wrn16_convs(10, 2);
    conv_case(8, 16, 14, 32, 3, 0);
    nhwc_act = 0;
    CK_AGREE();
}
END_TEST
#endif

/* ---- batch norm ---------------------------------------------------------------------------- */

static int bn_split, bn_batch; /* bn_cuda_set_split's, bn_cuda_set_batch's for the cases below */

/* Inputs U(lo, hi), running variances U(rv_lo, rv_hi). */
static void bn_case(int n, int c, int hw, float lo, float hi, float rv_lo, float rv_hi)
{
    const bn_dims d = {
        .n = n, .c = c, .hw = hw, .eps = BN_EPS, .momentum = BN_MOMENTUM, .nhwc = nhwc_act};
    const size_t nt = (size_t)n * c * hw, C = (size_t)c;
    char what[200];
    /* An offset far from 0: the statistics must not lose the spread to it. */
    float *in = randf(nt, lo, hi), *g = randf(C, 0.5f, 1.5f), *b = randf(C, -0.5f, 0.5f);
    float *rm = randf(C, -1, 1), *rv = randf(C, rv_lo, rv_hi), *add = randf(nt, -1, 1);
    float *dout = randf(nt, -1, 1), *din = randf(nt, -1, 1), *dg = randf(C, -1, 1),
          *dbt = randf(C, -1, 1);
    float *out = malloc(nt * sizeof *out), *mean = malloc(C * sizeof *mean),
          *invstd = malloc(C * sizeof *invstd);
    float *d_in = upa(in, nt, c, hw), *d_g = up(g, C), *d_b = up(b, C), *d_rm = up(rm, C),
          *d_rv = up(rv, C), *d_add = upa(add, nt, c, hw), *d_dout = upa(dout, nt, c, hw),
          *d_din = upa(din, nt, c, hw), *d_dg = up(dg, C), *d_dbt = up(dbt, C);
    float *d_out = gpu_context_alloc(nt * sizeof(float)), *d_mean = gpu_context_alloc(C * 4),
          *d_invstd = gpu_context_alloc(C * 4);
    const float p = 0.3f;
    const uint64_t key = dropout_key(7, 3, 2);
#define WHAT(s)                                                                                    \
    (snprintf(what, sizeof what, "bn%s%s N=%d C=%d HW=%d x~U(%g,%g) %s",                           \
              nhwc_act ? " (NHWC)" : bn_split > 0 ? " (split)" : "",                             \
              bn_batch > 0 ? " (batched loads)" : "", n, c, hw, lo, hi, s),                        \
     what)

    bn_forward_train(out, in, g, b, mean, invstd, rm, rv, &d);
    poison(d_out, nt), poison(d_mean, C), poison(d_invstd, C);
    bn_forward_train_cuda(d_out, d_in, d_g, d_b, d_mean, d_invstd, d_rm, d_rv, &d);
    expecta(WHAT("forward_train out"), d_out, out, nt, c, hw, 1e-5);
    expect(WHAT("forward_train mean"), d_mean, mean, C, 1e-5);
    expect(WHAT("forward_train invstd"), d_invstd, invstd, C, 1e-5);
    expect(WHAT("running mean"), d_rm, rm, C, 1e-5);
    expect(WHAT("running var"), d_rv, rv, C, 1e-5);

    bn_forward_infer(out, in, g, b, rm, rv, &d);
    poison(d_out, nt);
    bn_forward_infer_cuda(d_out, d_in, d_g, d_b, d_rm, d_rv, &d);
    expecta(WHAT("forward_infer"), d_out, out, nt, c, hw, 1e-5);

    gpu_context_upload(d_mean, mean, C * sizeof(float));
    gpu_context_upload(d_invstd, invstd, C * sizeof(float));
    bn_backward(din, dg, dbt, dout, in, g, mean, invstd, &d);
    bn_backward_cuda(d_din, d_dg, d_dbt, d_dout, d_in, d_g, d_mean, d_invstd, &d);
    expecta(WHAT("backward din +="), d_din, din, nt, c, hw, 1e-5);
    expect(WHAT("backward dgamma +="), d_dg, dg, C, 1e-5);
    expect(WHAT("backward dbeta +="), d_dbt, dbt, C, 1e-5);

    /* Fused, in place on in's copy, with dropout and the add. */
    float *x = copyf(in, nt), *d_x = upa(in, nt, c, hw);
    bn_relu_forward_train(x, x, add, p, key, g, b, mean, invstd, rm, rv, &d);
    poison(d_mean, C), poison(d_invstd, C);
    bn_relu_forward_train_cuda(d_x, d_x, d_add, p, key, d_g, d_b, d_mean, d_invstd, d_rm, d_rv,
                               &d);
    expecta(WHAT("relu_forward_train +dropout +add, in place"), d_x, x, nt, c, hw, 1e-5);
    expect(WHAT("relu_forward_train mean"), d_mean, mean, C, 1e-5);
    expect(WHAT("relu_forward_train invstd"), d_invstd, invstd, C, 1e-5);
    expect(WHAT("relu_forward_train running var"), d_rv, rv, C, 1e-5);

    /* The backward passes get the CPU's statistics on both sides, so the ReLU masks they
     * recompute are the same (the GPU's own differ from the CPU's by rounding). */
    gpu_context_upload(d_mean, mean, C * sizeof(float));
    gpu_context_upload(d_invstd, invstd, C * sizeof(float));
    /* Backward with the mask recomputed from in (the output had an add); din is "=". */
    float *junk = randf(nt, -9, 9);
    uploada(d_din, junk, nt, c, hw);
    bn_relu_backward(din, dg, dbt, dout, in, NULL, 0.0f, g, b, mean, invstd, &d);
    bn_relu_backward_cuda(d_din, d_dg, d_dbt, d_dout, d_in, NULL, 0.0f, d_g, d_b, d_mean,
                          d_invstd, &d);
    expecta(WHAT("relu_backward (mask from in) din ="), d_din, din, nt, c, hw, 1e-5);
    expect(WHAT("relu_backward (mask from in) dgamma +="), d_dg, dg, C, 1e-5);
    expect(WHAT("relu_backward (mask from in) dbeta +="), d_dbt, dbt, C, 1e-5);

    /* Without the add, then backward with the mask read off that output. */
    bn_relu_forward_train(out, in, NULL, p, key, g, b, mean, invstd, rm, rv, &d);
    poison(d_out, nt), poison(d_mean, C), poison(d_invstd, C);
    bn_relu_forward_train_cuda(d_out, d_in, NULL, p, key, d_g, d_b, d_mean, d_invstd, d_rm, d_rv,
                               &d);
    expecta(WHAT("relu_forward_train +dropout"), d_out, out, nt, c, hw, 1e-5);
    uploada(d_din, junk, nt, c, hw);
    bn_relu_backward(din, dg, dbt, dout, in, out, p, g, b, mean, invstd, &d);
    /* the CPU's output and statistics, so both sides apply the same mask */
    uploada(d_out, out, nt, c, hw);
    gpu_context_upload(d_mean, mean, C * sizeof(float));
    gpu_context_upload(d_invstd, invstd, C * sizeof(float));
    bn_relu_backward_cuda(d_din, d_dg, d_dbt, d_dout, d_in, d_out, p, d_g, d_b, d_mean, d_invstd,
                          &d);
    expecta(WHAT("relu_backward (mask from out) din ="), d_din, din, nt, c, hw, 1e-5);
    expect(WHAT("relu_backward (mask from out) dgamma +="), d_dg, dg, C, 1e-5);
    expect(WHAT("relu_backward (mask from out) dbeta +="), d_dbt, dbt, C, 1e-5);

    bn_relu_forward_infer(out, in, add, g, b, rm, rv, &d);
    poison(d_out, nt);
    bn_relu_forward_infer_cuda(d_out, d_in, d_add, d_g, d_b, d_rm, d_rv, &d);
    expecta(WHAT("relu_forward_infer +add"), d_out, out, nt, c, hw, 1e-5);

    /* gamma 0, beta 1: bn gives exactly 1, so the fused output is the dropout mask itself. */
    float *zero = calloc(C, sizeof *zero), *one = malloc(C * sizeof *one);
    for (size_t i = 0; i < C; i++)
        one[i] = 1.0f;
    gpu_context_upload(d_g, zero, C * sizeof(float));
    gpu_context_upload(d_b, one, C * sizeof(float));
    bn_relu_forward_train(out, in, NULL, p, key, zero, one, mean, invstd, rm, rv, &d);
    poison(d_out, nt);
    bn_relu_forward_train_cuda(d_out, d_in, NULL, p, key, d_g, d_b, d_mean, d_invstd, d_rm, d_rv,
                               &d);
    expecta(WHAT("fused dropout mask"), d_out, out, nt, c, hw, EXACT);
#undef WHAT

    float *bufs[] = {in, g, b, rm, rv, add, dout, din, dg, dbt, out, mean, invstd, x, junk, zero,
                     one};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        free(bufs[i]);
    float *dbufs[] = {d_in, d_g, d_b, d_rm, d_rv, d_add, d_dout, d_din, d_dg, d_dbt, d_out,
                      d_mean, d_invstd, d_x};
    for (size_t i = 0; i < sizeof dbufs / sizeof *dbufs; i++)
        gpu_context_free(dbufs[i]);
}

/* Inference alone (elementwise over the whole tensor): for sizes beyond one grid and for more
 * channels than bn_cuda.cu keeps in shared memory. */
static void bn_infer_case(int n, int c, int hw)
{
    const bn_dims d = {
        .n = n, .c = c, .hw = hw, .eps = BN_EPS, .momentum = BN_MOMENTUM, .nhwc = nhwc_act};
    const size_t nt = (size_t)n * c * hw, C = (size_t)c;
    char what[160];
    float *in = randf(nt, -2, 2), *add = randf(nt, -1, 1), *g = randf(C, 0.5f, 1.5f),
          *b = randf(C, -0.5f, 0.5f), *rm = randf(C, -1, 1), *rv = randf(C, 0.5f, 2.0f);
    float *out = malloc(nt * sizeof *out);
    float *d_in = upa(in, nt, c, hw), *d_add = upa(add, nt, c, hw), *d_g = up(g, C),
          *d_b = up(b, C), *d_rm = up(rm, C), *d_rv = up(rv, C),
          *d_out = gpu_context_alloc(nt * sizeof(float));

    bn_forward_infer(out, in, g, b, rm, rv, &d);
    poison(d_out, nt);
    bn_forward_infer_cuda(d_out, d_in, d_g, d_b, d_rm, d_rv, &d);
    snprintf(what, sizeof what, "bn%s N=%d C=%d HW=%d (%zu elements) forward_infer",
             nhwc_act ? " (NHWC)" : "", n, c, hw, nt);
    expecta(what, d_out, out, nt, c, hw, 1e-5);
    bn_relu_forward_infer(out, in, add, g, b, rm, rv, &d);
    poison(d_out, nt);
    bn_relu_forward_infer_cuda(d_out, d_in, d_add, d_g, d_b, d_rm, d_rv, &d);
    snprintf(what, sizeof what, "bn%s N=%d C=%d HW=%d (%zu elements) relu_forward_infer +add",
             nhwc_act ? " (NHWC)" : "", n, c, hw, nt);
    expecta(what, d_out, out, nt, c, hw, 1e-5);

    free(in), free(add), free(g), free(b), free(rm), free(rv), free(out);
    float *dbufs[] = {d_in, d_add, d_g, d_b, d_rm, d_rv, d_out};
    for (size_t i = 0; i < sizeof dbufs / sizeof *dbufs; i++)
        gpu_context_free(dbufs[i]);
}

/* |got − ref| per channel against the scale of what was summed: within tol of Σ|terms| + |ref|
 * (dpre is a sum over the channel's M values of din, added to a start value). */
static void expect_channel_sums(const char *what, const float *dev, const float *ref,
                                const double *scale, size_t C, double tol)
{
    float *got = down(dev, C);
    size_t worst = 0;
    double we = -1.0;
    for (size_t c = 0; c < C; c++) {
        const double e = fabs((double)got[c] - ref[c]) / (scale[c] + fabs(ref[c]));
        if (e > we || e != e) {
            we = e;
            worst = c;
        }
    }
    CK_EXPECT(we <= tol, "%s: channel %zu is %.9g on the GPU, %.9g on the CPU (%.3g of its scale, "
              "tolerance %.1g)", what, worst, got[worst], ref[worst], we, tol);
    free(got);
}

/* bn_nhwc_channel_sums_cuda (an NHWC convolution's bias gradient): acc += each channel's sum of
 * an NHWC tensor, against the CPU's sum in double, within 1e-6 of the scale of what was added. */
static void channel_sums_case(int n, int c, int hw)
{
    const bn_dims d = {.n = n, .c = c, .hw = hw, .nhwc = 1};
    const size_t nt = (size_t)n * c * hw;
    float *x = randf(nt, -1, 1), *acc = randf((size_t)c, -1, 1);
    float *ref = malloc((size_t)c * sizeof *ref);
    double *scale = calloc((size_t)c, sizeof *scale);
    for (int ch = 0; ch < c; ch++) {
        double sum = 0.0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < hw; j++) {
                const float v = x[((size_t)i * c + ch) * hw + j]; /* x is NCHW here */
                sum += v;
                scale[ch] += fabs(v);
            }
        ref[ch] = (float)(acc[ch] + sum);
        scale[ch] += fabs(acc[ch]);
    }
    float *d_x = upa(x, nt, c, hw), *d_acc = up(acc, (size_t)c);
    bn_nhwc_channel_sums_cuda(d_acc, d_x, &d);
    char what[96];
    snprintf(what, sizeof what, "NHWC channel sums (%d, %d, %d) +=", n, c, hw);
    expect_channel_sums(what, d_acc, ref, scale, (size_t)c, 1e-6);
    free(x);
    free(acc);
    free(ref);
    free(scale);
    gpu_context_free(d_x);
    gpu_context_free(d_acc);
}

/* A convolution's bias folded into the fused batch norm (bn_relu_*_pre_cuda, HVDLAB_BIAS_IN_BN):
 * the GPU normalises in + pre where the CPU is given that sum, as the convolution would have
 * stored it; backward also adds Σ din over each channel into dpre. The backward passes get
 * statistics a little off the batch's own (mean + 0.1), on both sides: with the batch's own,
 * Σ din is 0 up to rounding, and a dpre left alone would pass. */
static void bn_pre_case(int n, int c, int hw)
{
    const bn_dims d = {
        .n = n, .c = c, .hw = hw, .eps = BN_EPS, .momentum = BN_MOMENTUM, .nhwc = nhwc_act};
    const size_t nt = (size_t)n * c * hw, C = (size_t)c, HW = (size_t)hw;
    const float p = 0.3f;
    const uint64_t key = dropout_key(9, 4, 1);
    char what[200];
    float *in = randf(nt, 2, 4), *pre = randf(C, -1, 1), *add = randf(nt, -1, 1),
          *dout = randf(nt, -1, 1), *g = randf(C, 0.5f, 1.5f), *b = randf(C, -0.5f, 0.5f),
          *rm = randf(C, -1, 1), *rv = randf(C, 0.5f, 2.0f), *dpre = randf(C, -1, 1),
          *dg = randf(C, -1, 1), *dbt = randf(C, -1, 1);
    float *in2 = malloc(nt * sizeof *in2), *out = malloc(nt * sizeof *out),
          *din = malloc(nt * sizeof *din), *mean = malloc(C * sizeof *mean),
          *invstd = malloc(C * sizeof *invstd);
    double *scale = malloc(C * sizeof *scale);
    for (size_t i = 0; i < nt; i++)
        in2[i] = in[i] + pre[(i / HW) % C];
    float *d_in = upa(in, nt, c, hw), *d_pre = up(pre, C), *d_add = upa(add, nt, c, hw),
          *d_dout = upa(dout, nt, c, hw),
          *d_g = up(g, C), *d_b = up(b, C), *d_rm = up(rm, C), *d_rv = up(rv, C),
          *d_dpre = up(dpre, C), *d_dg = up(dg, C), *d_dbt = up(dbt, C);
    float *d_out = gpu_context_alloc(nt * sizeof(float)), *d_din = gpu_context_alloc(nt * 4),
          *d_mean = gpu_context_alloc(C * 4), *d_invstd = gpu_context_alloc(C * 4);
#define WHAT(s)                                                                                    \
    (snprintf(what, sizeof what, "bn, bias folded in%s%s N=%d C=%d HW=%d %s",                      \
              nhwc_act ? " (NHWC)" : bn_split > 0 ? " (split)" : "",                             \
              bn_batch > 0 ? " (batched loads)" : "", n, c, hw, s),                                \
     what)

    /* training forward with the add, then with dropout and no add */
    bn_relu_forward_train(out, in2, add, 0.0f, 0, g, b, mean, invstd, rm, rv, &d);
    poison(d_out, nt), poison(d_mean, C), poison(d_invstd, C);
    bn_relu_forward_train_pre_cuda(d_out, d_in, d_pre, d_add, 0.0f, 0, d_g, d_b, d_mean,
                                   d_invstd, d_rm, d_rv, &d);
    expecta(WHAT("forward_train +add out"), d_out, out, nt, c, hw, 1e-5);
    expect(WHAT("forward_train mean"), d_mean, mean, C, 1e-5);
    expect(WHAT("forward_train invstd"), d_invstd, invstd, C, 1e-5);
    expect(WHAT("running mean"), d_rm, rm, C, 1e-5);
    expect(WHAT("running var"), d_rv, rv, C, 1e-5);
    bn_relu_forward_train(out, in2, NULL, p, key, g, b, mean, invstd, rm, rv, &d);
    poison(d_out, nt);
    bn_relu_forward_train_pre_cuda(d_out, d_in, d_pre, NULL, p, key, d_g, d_b, d_mean, d_invstd,
                                   d_rm, d_rv, &d);
    expecta(WHAT("forward_train +dropout out"), d_out, out, nt, c, hw, 1e-5);

    bn_relu_forward_infer(din, in2, add, g, b, rm, rv, &d); /* din: scratch for the reference */
    poison(d_din, nt);
    bn_relu_forward_infer_pre_cuda(d_din, d_in, d_pre, d_add, d_g, d_b, d_rm, d_rv, &d);
    expecta(WHAT("forward_infer +add"), d_din, din, nt, c, hw, 1e-5);

    for (size_t i = 0; i < C; i++)
        mean[i] += 0.1f;
    gpu_context_upload(d_mean, mean, C * sizeof(float));
    gpu_context_upload(d_invstd, invstd, C * sizeof(float));
    uploada(d_out, out, nt, c, hw); /* the CPU's mask on both sides */
    for (int from_out = 1; from_out >= 0; from_out--) {
        const float *o = from_out ? out : NULL, *d_o = from_out ? d_out : NULL;
        const float q = from_out ? p : 0.0f;
        bn_relu_backward(din, dg, dbt, dout, in2, o, q, g, b, mean, invstd, &d);
        bn_relu_backward_pre_cuda(d_din, d_dpre, d_dg, d_dbt, d_dout, d_in, d_pre, d_o, q, d_g,
                                  d_b, d_mean, d_invstd, &d);
        for (size_t ch = 0; ch < C; ch++) {
            double sum = 0.0, abs_sum = 0.0;
            for (int k = 0; k < n; k++)
                for (size_t i = 0; i < HW; i++) {
                    const double v = din[((size_t)k * C + ch) * HW + i];
                    sum += v;
                    abs_sum += fabs(v);
                }
            dpre[ch] = (float)(dpre[ch] + sum);
            scale[ch] = abs_sum;
        }
        expecta(WHAT(from_out ? "relu_backward (mask from out) din =" : "relu_backward din ="),
                d_din, din, nt, c, hw, 1e-5);
        expect(WHAT("relu_backward dgamma +="), d_dg, dg, C, 1e-5);
        expect_channel_sums(WHAT("relu_backward dpre += (the bias's gradient)"), d_dpre, dpre,
                            scale, C, 1e-5);
    }
#undef WHAT
    float *bufs[] = {in, pre, add, dout, g, b, rm, rv, dpre, dg, dbt, in2, out, din, mean, invstd};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        free(bufs[i]);
    free(scale);
    float *dbufs[] = {d_in, d_pre, d_add, d_dout, d_g, d_b, d_rm, d_rv, d_dpre, d_dg, d_dbt,
                      d_out, d_din, d_mean, d_invstd};
    for (size_t i = 0; i < sizeof dbufs / sizeof *dbufs; i++)
        gpu_context_free(dbufs[i]);
}

/* Batched loads (HVDLAB_BN_BATCH=1) take the same elements in the same order as one at a time, so
 * every output must have the same bits both ways: fused training forward with dropout and the
 * add, in place, and both backward forms (mask read off that output, din =; plain, din +=). With
 * the add the output is no ReLU mask, but any values serve to compare bits. */
static void bn_batch_same_bits(int n, int c, int hw)
{
    const bn_dims d = {.n = n, .c = c, .hw = hw, .eps = BN_EPS, .momentum = BN_MOMENTUM};
    const size_t nt = (size_t)n * c * hw, C = (size_t)c;
    const uint64_t key = dropout_key(5, 1, 2);
    float *in = randf(nt, 2, 4), *add = randf(nt, -1, 1), *dout = randf(nt, -1, 1),
          *g = randf(C, 0.5f, 1.5f), *b = randf(C, -0.5f, 0.5f), *rv = randf(C, 0.5f, 2.0f),
          *rm = randf(C, -1, 1), *din0 = randf(nt, -1, 1);
    float *got[2][7]; /* [batch][out, mean, invstd, run_var, din =, din +=, dgamma] */
    for (int batch = 0; batch <= 1; batch++) {
        bn_cuda_set_batch(batch);
        float *d_x = up(in, nt), *d_add = up(add, nt), *d_dout = up(dout, nt), *d_g = up(g, C),
              *d_b = up(b, C), *d_rm = up(rm, C), *d_rv = up(rv, C), *d_din = up(din0, nt),
              *d_din2 = up(din0, nt), *d_dg = up(rm, C), *d_db = up(rm, C), *d_in = up(in, nt),
              *d_mean = gpu_context_alloc(C * 4), *d_invstd = gpu_context_alloc(C * 4);
        bn_relu_forward_train_cuda(d_x, d_x, d_add, 0.3f, key, d_g, d_b, d_mean, d_invstd, d_rm,
                                   d_rv, &d);
        bn_relu_backward_cuda(d_din, d_dg, d_db, d_dout, d_in, d_x, 0.3f, d_g, d_b, d_mean,
                              d_invstd, &d);
        bn_backward_cuda(d_din2, d_dg, d_db, d_dout, d_in, d_g, d_mean, d_invstd, &d);
        float *outs[7] = {d_x, d_mean, d_invstd, d_rv, d_din, d_din2, d_dg};
        for (int i = 0; i < 7; i++)
            got[batch][i] = down(outs[i], i == 0 || i == 4 || i == 5 ? nt : C);
        float *dbufs[] = {d_x, d_add, d_dout, d_g, d_b, d_rm, d_rv, d_din, d_din2, d_dg, d_db, d_in,
                          d_mean, d_invstd};
        for (size_t i = 0; i < sizeof dbufs / sizeof *dbufs; i++)
            gpu_context_free(dbufs[i]);
    }
    static const char *names[7] = {"fused forward out", "mean", "invstd", "running var",
                                   "relu_backward din =", "backward din +=", "dgamma"};
    for (int i = 0; i < 7; i++) {
        const size_t len = i == 0 || i == 4 || i == 5 ? nt : C;
        size_t k = 0;
        while (k < len && memcmp(&got[0][i][k], &got[1][i][k], sizeof(float)) == 0)
            k++;
        CK_EXPECT(k == len, "bn%s N=%d C=%d HW=%d %s: element %zu is %.9g one at a time, %.9g "
                  "batched", bn_split > 0 ? " (split)" : "", n, c, hw, names[i], k,
                  k < len ? got[0][i][k] : 0.0f, k < len ? got[1][i][k] : 0.0f);
        free(got[0][i]), free(got[1][i]);
    }
    free(in), free(add), free(dout), free(g), free(b), free(rv), free(rm), free(din0);
}

/* The batch-norm cases both layouts run (NCHW split or not: 3 parts at 8·784, 24 at 64·784;
 * NHWC: 49 parts at 8·784, 98 at 32·196, 392 at 64·784). */
static void bn_cases_both_layouts(void)
{
    bn_case(8, 16, 784, 2.0f, 4.0f, 0.5f, 2.0f);
    bn_case(8, 64, 196, 2.0f, 4.0f, 0.5f, 2.0f);
    bn_case(4, 3, 30, 2.0f, 4.0f, 0.5f, 2.0f);
    /* variance ~8e-6 against eps 1e-5, in training and (running variances too) in inference */
    bn_case(8, 16, 196, 2.0f, 2.01f, 0.0f, 2e-5f);
    bn_case(2, 5, 7, 2.0f, 2.01f, 0.0f, 2e-5f);
    bn_case(64, 16, 784, 2.0f, 4.0f, 0.5f, 2.0f);
    bn_case(32, 160, 196, 2.0f, 4.0f, 0.5f, 2.0f);
    bn_pre_case(8, 16, 784);
    bn_pre_case(4, 3, 30);
    bn_pre_case(32, 160, 196);
}

START_TEST(bn_matches_cpu)
{
    /* one block per channel, then split over several (bn_cuda.cu: parts of >= 2048 elements, so
     * 8·784 rows take 3 parts, 64·784 24, 32·196 3 and 64·196 6; uneven where M/P is not whole);
     * each with a thread's loads one at a time, then in batches (HVDLAB_BN_BATCH) */
    for (int way = 0; way < 4; way++) {
        bn_split = way & 1;
        bn_batch = way >> 1;
        bn_cuda_set_split(bn_split);
        bn_cuda_set_batch(bn_batch);
        bn_cases_both_layouts();
        bn_case(8, 256, 49, 2.0f, 4.0f, 0.5f, 2.0f);
        bn_case(64, 16, 196, 2.0f, 2.01f, 0.0f, 2e-5f);
    }
    for (bn_split = 0; bn_split <= 1; bn_split++) {
        bn_cuda_set_split(bn_split);
        bn_batch_same_bits(8, 16, 784); /* tails: 8·784 = 6272 is not a multiple of 4·512 */
        bn_batch_same_bits(3, 7, 49);
        bn_batch_same_bits(64, 16, 196);
    }
    bn_split = bn_batch = -1;
    bn_cuda_set_split(-1); /* the other suites: the environment's choice */
    bn_cuda_set_batch(-1);
    bn_infer_case(6, 10, 50021); /* ~3·2^20 elements: the grid goes round three times */
    bn_infer_case(2, 1500, 33);  /* channels beyond the shared-memory table */
    /* NHWC (bn_nhwc_cuda.cu): tiles of 16 channels (C = 16), 32 (64) and five of 32 (160), a
     * tile of fewer (3, 5), a last tile partial (48 = 32 + 16, 33 = 32 + 1); from 1 part of the
     * rows (2·7 rows, and one row: 1·1) to 49 (8·784), 98 (32·196) and 392 (64·784: more
     * partials a channel than the finishing block has threads), and capped at 2048 blocks
     * (4·784 rows of 2048 channels: 64 tiles of 32 parts) */
    nhwc_act = 1;
    bn_cases_both_layouts();
    bn_case(3, 48, 37, 2.0f, 4.0f, 0.5f, 2.0f);
    bn_case(1, 33, 1, 2.0f, 4.0f, 0.5f, 2.0f);
    bn_case(4, 2048, 784, 2.0f, 4.0f, 0.5f, 2.0f);
    bn_pre_case(64, 16, 784);
    bn_infer_case(2, 1500, 33);
    /* the plain channel sums, as the 1x1 shortcuts' bias gradients (16, 64 and 128 channels in,
     * 64, 128 and 256 out at wrn-16-4) take them, and the odd tiles above */
    channel_sums_case(8, 64, 784);
    channel_sums_case(8, 256, 49);
    channel_sums_case(64, 64, 784);
    channel_sums_case(3, 48, 37);
    channel_sums_case(1, 33, 1);
    nhwc_act = 0;
    CK_AGREE();
}
END_TEST

/* ---- activations, pooling ------------------------------------------------------------------ */

static void act_case(size_t n)
{
    const float p = 0.3f;
    char what[96];
    const uint64_t key = dropout_key(42, 17, 5);
    float *in = randf(n, -1, 1), *dout = randf(n, -1, 1), *din = randf(n, -1, 1);
    float *out = malloc(n * sizeof *out);
    float *d_in = up(in, n), *d_dout = up(dout, n), *d_din = up(din, n);
    float *d_out = gpu_context_alloc(n * sizeof(float));

#define WHAT(s) (snprintf(what, sizeof what, "%s n=%zu", s, n), what)
    relu_forward(out, in, n);
    poison(d_out, n);
    relu_forward_cuda(d_out, d_in, n);
    expect(WHAT("relu_forward"), d_out, out, n, EXACT);
    relu_backward(din, dout, out, n);
    relu_backward_cuda(d_din, d_dout, d_out, n);
    expect(WHAT("relu_backward +="), d_din, din, n, EXACT);

    dropout_forward(out, in, n, p, key, 1);
    poison(d_out, n);
    dropout_forward_cuda(d_out, d_in, n, p, key, 1);
    expect(WHAT("dropout_forward (the mask)"), d_out, out, n, EXACT);
    dropout_backward(din, dout, n, p, key);
    dropout_backward_cuda(d_din, d_dout, n, p, key);
    expect(WHAT("dropout_backward +="), d_din, din, n, EXACT);
    dropout_backward(din, dout, n, 0.0f, key);
    dropout_backward_cuda(d_din, d_dout, n, 0.0f, key);
    expect(WHAT("dropout_backward p=0 +="), d_din, din, n, EXACT);
    dropout_forward(out, in, n, p, key, 0);
    poison(d_out, n);
    dropout_forward_cuda(d_out, d_in, n, p, key, 0);
    expect(WHAT("dropout_forward inference (a copy)"), d_out, out, n, EXACT);
    /* in place: the mask applied to the buffer itself */
    float *x = copyf(in, n);
    dropout_forward(x, x, n, p, key, 1);
    dropout_forward_cuda(d_in, d_in, n, p, key, 1);
    expect(WHAT("dropout_forward in place"), d_in, x, n, EXACT);
#undef WHAT

    free(in), free(dout), free(din), free(out), free(x);
    gpu_context_free(d_in), gpu_context_free(d_dout), gpu_context_free(d_din);
    gpu_context_free(d_out);
}

START_TEST(act_same_bits)
{
    act_case(100003);
    act_case(3000017); /* beyond one grid (2^20 threads): the loops go round three times */
    CK_AGREE();
}
END_TEST

static void pool_case(int n, int c, int h, int w)
{
    const pool_dims d = {.n = n, .c = c, .h = h, .w = w, .nhwc = nhwc_act};
    const size_t ni = (size_t)n * c * h * w, no = (size_t)n * c * (h / 2) * (w / 2),
                 ng = (size_t)n * c;
    char what[96];
    float *in = randf(ni, 0, 4);
    for (size_t i = 0; i < ni; i++) /* few levels: windows with equal maxima */
        in[i] = floorf(in[i]);
    float *out = malloc(no * sizeof *out), *dout = randf(no, -1, 1), *din = randf(ni, -1, 1);
    float *gout = malloc(ng * sizeof *gout), *gdout = randf(ng, -1, 1);
    const int hw = h * w, hwo = (h / 2) * (w / 2);
    const char *lay = nhwc_act ? " (NHWC)" : "";
    float *d_in = upa(in, ni, c, hw), *d_dout = upa(dout, no, c, hwo), *d_din = upa(din, ni, c, hw),
          *d_gdout = up(gdout, ng);
    float *d_out = gpu_context_alloc(no * sizeof(float)), *d_gout = gpu_context_alloc(ng * 4);

    maxpool2_forward(out, in, &d);
    poison(d_out, no);
    maxpool2_forward_cuda(d_out, d_in, &d);
    snprintf(what, sizeof what, "maxpool2_forward%s %dx%dx%dx%d", lay, n, c, h, w);
    expecta(what, d_out, out, no, c, hwo, EXACT);
    maxpool2_backward(din, dout, in, out, &d);
    maxpool2_backward_cuda(d_din, d_dout, d_in, d_out, &d);
    snprintf(what, sizeof what, "maxpool2_backward +=%s %dx%dx%dx%d", lay, n, c, h, w);
    expecta(what, d_din, din, ni, c, hw, EXACT);

    free(in);
    in = randf(ni, -1, 1);
    uploada(d_in, in, ni, c, hw);
    gap_forward(gout, in, &d);
    poison(d_gout, ng);
    gap_forward_cuda(d_gout, d_in, &d);
    snprintf(what, sizeof what, "gap_forward%s %dx%dx%dx%d", lay, n, c, h, w);
    expect(what, d_gout, gout, ng, EXACT);
    gap_backward(din, gdout, &d);
    gap_backward_cuda(d_din, d_gdout, &d);
    snprintf(what, sizeof what, "gap_backward +=%s %dx%dx%dx%d", lay, n, c, h, w);
    expecta(what, d_din, din, ni, c, hw, EXACT);

    free(in), free(out), free(dout), free(din), free(gout), free(gdout);
    gpu_context_free(d_in), gpu_context_free(d_dout), gpu_context_free(d_din);
    gpu_context_free(d_gdout), gpu_context_free(d_out), gpu_context_free(d_gout);
}

START_TEST(pool_same_bits)
{
    for (nhwc_act = 0; nhwc_act <= 1; nhwc_act++) { /* NCHW, then NHWC */
        pool_case(8, 16, 28, 28);
        pool_case(8, 64, 14, 14);
        pool_case(8, 256, 7, 7);
        pool_case(3, 5, 7, 9);     /* odd: the last row and column are dropped */
        pool_case(32, 96, 29, 30); /* 2,672,640 inputs: GAP backward beyond one grid */
    }
    nhwc_act = 0;
    CK_AGREE();
}
END_TEST

/* ---- dense, softmax cross-entropy ---------------------------------------------------------- */
#ifndef HVDLAB_CUDA_EMU /* cuBLAS: not in the CPU emulator */

static void dense_case(int n, int in_f, int out_f, int bias)
{
    const dense_dims d = {.n = n, .in = in_f, .out = out_f};
    const size_t ni = (size_t)n * in_f, no = (size_t)n * out_f, nw = (size_t)out_f * in_f;
    char what[96];
    float *in = randf(ni, -1, 1), *w = randf(nw, -0.5f, 0.5f), *b = randf((size_t)out_f, -1, 1);
    float *out = malloc(no * sizeof *out), *dout = randf(no, -1, 1), *din = randf(ni, -1, 1),
          *dw = randf(nw, -1, 1), *db = randf((size_t)out_f, -1, 1);
    float *d_in = up(in, ni), *d_w = up(w, nw), *d_b = up(b, (size_t)out_f),
          *d_dout = up(dout, no), *d_din = up(din, ni), *d_dw = up(dw, nw),
          *d_db = up(db, (size_t)out_f), *d_out = gpu_context_alloc(no * sizeof(float));

    dense_forward(out, in, w, bias ? b : NULL, &d);
    poison(d_out, no);
    dense_forward_cuda(d_out, d_in, d_w, bias ? d_b : NULL, &d);
    snprintf(what, sizeof what, "dense %d->%d N=%d%s forward", in_f, out_f, n,
             bias ? "" : " (no bias)");
    expect(what, d_out, out, no, 1e-4);
    dense_backward(din, dw, db, dout, in, w, &d);
    dense_backward_cuda(d_din, d_dw, d_db, d_dout, d_in, d_w, &d);
    snprintf(what, sizeof what, "dense %d->%d N=%d din +=", in_f, out_f, n);
    expect(what, d_din, din, ni, 1e-4);
    snprintf(what, sizeof what, "dense %d->%d N=%d dw +=", in_f, out_f, n);
    expect(what, d_dw, dw, nw, 1e-4);
    snprintf(what, sizeof what, "dense %d->%d N=%d db +=", in_f, out_f, n);
    expect(what, d_db, db, (size_t)out_f, EXACT);

    float *bufs[] = {in, w, b, out, dout, din, dw, db};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        free(bufs[i]);
    float *dbufs[] = {d_in, d_w, d_b, d_dout, d_din, d_dw, d_db, d_out};
    for (size_t i = 0; i < sizeof dbufs / sizeof *dbufs; i++)
        gpu_context_free(dbufs[i]);
}

/* No inputs (d->in = 0): out is the bias or 0, as dense.c's loop before its sgemm, and backward
 * only adds the bias gradient. Worked out here: OpenBLAS rejects the empty product's lda. */
static void dense_no_inputs(int n, int out_f, int bias)
{
    const dense_dims d = {.n = n, .in = 0, .out = out_f};
    const size_t no = (size_t)n * out_f;
    char what[96];
    float *b = randf((size_t)out_f, -1, 1), *dout = randf(no, -1, 1),
          *db = randf((size_t)out_f, -1, 1), *out = malloc(no * sizeof *out);
    for (size_t i = 0; i < no; i++)
        out[i] = bias ? b[i % (size_t)out_f] : 0.0f;
    float *d_b = up(b, (size_t)out_f), *d_dout = up(dout, no), *d_db = up(db, (size_t)out_f);
    float *d_out = gpu_context_alloc(no * sizeof(float));
    poison(d_out, no);
    dense_forward_cuda(d_out, NULL, NULL, bias ? d_b : NULL, &d);
    snprintf(what, sizeof what, "dense 0->%d N=%d%s forward", out_f, n, bias ? "" : " (no bias)");
    expect(what, d_out, out, no, EXACT);
    dense_backward(NULL, NULL, db, dout, NULL, NULL, &d); /* only the bias loop runs */
    dense_backward_cuda(NULL, NULL, d_db, d_dout, NULL, NULL, &d);
    snprintf(what, sizeof what, "dense 0->%d N=%d db +=", out_f, n);
    expect(what, d_db, db, (size_t)out_f, EXACT);
    free(b), free(dout), free(db), free(out);
    gpu_context_free(d_b), gpu_context_free(d_dout), gpu_context_free(d_db);
    gpu_context_free(d_out);
}

START_TEST(dense_matches_cpu)
{
    dense_case(8, 64, 10, 1);
    dense_case(128, 256, 10, 1);
    dense_case(37, 640, 10, 0);
    dense_no_inputs(6, 10, 1);
    dense_no_inputs(6, 10, 0);
    CK_AGREE();
}
END_TEST
#endif

START_TEST(xent_matches_cpu)
{
    const int n = 300, k = 10; /* more rows than the kernel's block has threads */
    const size_t nk = (size_t)n * k;
    float *logits = randf(nk, -5, 5), *probs = malloc(nk * sizeof *probs),
          *dl = randf(nk, -1, 1);
    int *labels = malloc((size_t)n * sizeof *labels);
    for (int i = 0; i < n; i++) {
        labels[i] = (int)(lm_splitmix64(&rng) % (uint64_t)k);
        if (i % 7 == 0) /* ties: the first maximum is the argmax */
            logits[(size_t)i * k + 3] = logits[(size_t)i * k + 8] = 9.0f;
    }
    float *d_logits = up(logits, nk), *d_dl = up(dl, nk);
    float *d_probs = gpu_context_alloc(nk * sizeof(float));
    int *d_labels = gpu_context_alloc((size_t)n * sizeof *d_labels);
    gpu_context_upload(d_labels, labels, (size_t)n * sizeof *labels);

    const double loss = xent_forward(probs, logits, labels, n, k);
    poison(d_probs, nk);
    const double gloss = xent_forward_cuda(d_probs, d_logits, d_labels, n, k);
    CK_EXPECT(fabs(gloss - loss) <= 1e-6 * fabs(loss), "xent loss: GPU %.10g, CPU %.10g", gloss,
              loss);
    expect("xent probs", d_probs, probs, nk, 1e-5);
    /* the CPU's probabilities on both sides: the gradient itself must match bit for bit */
    gpu_context_upload(d_probs, probs, nk * sizeof(float));
    xent_backward(dl, probs, labels, n, k, 0.5f);
    xent_backward_cuda(d_dl, d_probs, d_labels, n, k, 0.5f);
    expect("xent_backward +=", d_dl, dl, nk, EXACT);
    const int c = xent_correct(logits, labels, n, k);
    const int gc = xent_correct_cuda(d_logits, d_labels, n, k);
    CK_EXPECT(gc == c, "xent_correct: GPU %d, CPU %d", gc, c);

    free(logits), free(probs), free(dl), free(labels);
    gpu_context_free(d_logits), gpu_context_free(d_dl), gpu_context_free(d_probs);
    gpu_context_free(d_labels);
    CK_AGREE();
}
END_TEST

/* The loss scaler's unscale on a GPU model (optim.c: optim_scale_cuda, then
 * optim_non_finite_cuda) against loss_scale_unscale: the same bits (a multiply by 1/S, exact for
 * a power of two), the same count of NaN and Inf, the first one's index; beyond one grid. */
START_TEST(loss_scale_unscale_same_bits)
{
    const size_t n = 3000017;
    loss_scale ls = loss_scale_defaults();
    float *g = randf(n, -3e4f, 3e4f);
    g[2500001] = INFINITY; /* past the first grid-stride round */
    g[2999999] = NAN;
    g[1048577] = 1e-42f * ls.scale; /* a subnormal once unscaled */
    float *d_g = up(g, n);
    const size_t bad = loss_scale_unscale(&ls, g, n);
    size_t first = 0;
    optim_scale_cuda(d_g, n, 1.0f / ls.scale);
    const size_t gbad = optim_non_finite_cuda(d_g, n, &first);
    expect("loss-scale unscale", d_g, g, n, EXACT);
    CK_EXPECT(gbad == bad && bad == 2, "non-finite after unscaling: GPU %zu, CPU %zu, want 2",
              gbad, bad);
    CK_EXPECT(first == 2500001, "first non-finite at %zu on the GPU, want 2500001", first);
    free(g);
    gpu_context_free(d_g);
    CK_AGREE();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("twins_cuda");
    /* The kit's own kernels, then the layers on NVIDIA's libraries: two cases, so that
     * CK_RUN_CASE=kernels runs the first alone (make gpu-memcheck: memcheck's slowdown on
     * cuDNN's Find over every shape would cost minutes). */
    TCase *tc = tcase_create("kernels");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, act_same_bits);
    tcase_add_test(tc, pool_same_bits);
    tcase_add_test(tc, xent_matches_cpu);
    tcase_add_test(tc, bn_matches_cpu);
    tcase_add_test(tc, loss_scale_unscale_same_bits);
    suite_add_tcase(s, tc);
#ifndef HVDLAB_CUDA_EMU /* cuDNN and cuBLAS: not in the CPU emulator */
    TCase *libs = tcase_create("libraries");
    tcase_set_timeout(libs, 600);
    tcase_add_test(libs, dense_matches_cpu);
    tcase_add_test(libs, conv_matches_cpu);
    tcase_add_test(libs, conv_bias_grad_cudnn_matches_cpu);
    tcase_add_test(libs, conv_nhwc_matches_cpu);
    suite_add_tcase(s, libs);
#endif
    return s;
}

int main(int argc, char **argv)
{
#ifdef HVDLAB_CUDA_EMU
    printf("test_twins_emu: the kernels of bn, act, pool and xent emulated on the CPU "
           "(tests/emu): their arithmetic and indexing, not a GPU result\n");
#else
    const int rc = gpu_skip_status(NULL);
    if (rc != 0)
        return rc;
#endif
    /* CUDA is initialised in this process and does not survive a fork: run the tests here. */
    setenv("CK_FORK", "no", 1);
    gpu_context_set_tf32(0);
    if (gpu_context_tf32() != 0) {
        printf("test_twins_cuda: could not turn TF32 off\n");
        return EXIT_FAILURE;
    }
#ifdef HVDLAB_DNNL
    conv2d_dnnl_set_algo("direct"); /* the plainest CPU reference: see the top */
#endif
    return ck_mpi_main(argc, argv, suite(), 0);
}

#else

int main(void) { return gpu_skip_status(NULL); }

#endif
