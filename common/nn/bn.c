/* bn.c — batch normalisation, CPU. See bn.h.
 * Public: bn_forward_train, bn_forward_infer, bn_backward, bn_relu_forward_train,
 *         bn_relu_forward_infer, bn_relu_backward.
 *
 * Work is split by channel over compute_threads() OpenMP threads; each channel is done by one
 * thread in a fixed order, so results do not depend on the thread count. A channel (N rows of
 * H·W floats) is at most 400 KB for the WRNs at batch 128, so its second and third passes read
 * from the core's cache, not from memory.
 *
 * Channel sums: each row (H·W ≤ 784 values) is summed in float — vectorised — after subtracting
 * a per-channel shift (the channel's first value), and the row sums are added in double. A
 * channel of wrn-16-10 at batch 128 has 100,352 elements; a single float running sum would lose
 * the small differences that the variance and gradients depend on, the shifted row sums do not
 * (the shift keeps the float terms small even for a large common offset, see test_layers). The
 * variance is computed in two passes (mean first), exact enough for any offset.
 *
 * Running variance: like PyTorch, the update takes the unbiased batch variance var·M/(M−1)
 * (M = N·H·W) while normalisation uses the biased one. Keras does the same in effect:
 * standalone Keras 2.x multiplies the batch variance by M/(M − 1 − eps) before the update, and
 * tf.keras's fused kernel (used for 4-D inputs) returns the Bessel-corrected M/(M−1) variance
 * for it; only tf.keras's non-fused path (tf.nn.moments) updates with the biased variance.
 *
 * The fused forms (bn_relu_*) apply, per element and in this order, exactly the float
 * operations of bn_forward_*, relu_forward, dropout_forward and an add, so they give the same
 * values as those layers in sequence while reading and writing the tensor once.
 */
#include "nn/bn.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "base/threads.h"
#include "nn/layer_math.h"

/* Row sums run in LANES independent float accumulators (lane j takes elements j, j+LANES, ...;
 * a row's tail goes to lane 0), added up in lane order at the end: a fixed order of operations,
 * so every build (SSE, AVX2 or AVX-512 clone) gives the same bits, and the compiler can keep
 * the lanes in one vector register. */
#define LANES 8

/* The per-channel workers are built for x86-64-v4 (AVX-512) and AVX2 as well as the baseline,
 * picked at load time (without FMA contraction: -std=c11 leaves it off, so all give the same
 * bits; tests/unit/test_bn_clones.c compares them). The AVX-512 clone matters for the fused
 * dropout: its mask hashes 64-bit integers, and only AVX-512 multiplies those in vectors
 * (vpmullq); AVX2 emulates them with 32-bit multiplies, 2.5x slower per wrn-16-1 step
 * (10.4 -> 4.2 ms). */
#ifndef HOT /* tests/unit/test_bn_clones.c builds this file once per target (mk/bn_clones.mk) */
#define HOT __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#endif

static inline __attribute__((always_inline)) float lanes_sum(const float *l)
{
    float s = 0.0f;
    for (int j = 0; j < LANES; j++)
        s += l[j];
    return s;
}

/* Asks for a row of n floats ahead of its use. Backward's first pass reads three tensors a row
 * (≤ 3 KB) at a time, rows CHW floats apart: a new stream for the hardware prefetcher every
 * few KB. Prefetching the next rows took bn+relu backward from 10.4 to 8.7 ms per wrn-16-1 step
 * (1 thread); the same in forward's passes and backward's second pass gained nothing. */
static inline __attribute__((always_inline)) void prefetch_row(const float *row, size_t n)
{
    for (size_t i = 0; i < n; i += 16)
        __builtin_prefetch(row + i);
}

/* Σ (row[i] − shift) over n floats. */
static inline __attribute__((always_inline)) float row_sum(const float *row, size_t n, float shift)
{
    float acc[LANES] = {0};
    size_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++)
            acc[j] += row[i + j] - shift;
    for (; i < n; i++)
        acc[0] += row[i] - shift;
    return lanes_sum(acc);
}

/* Σ (row[i] − mean)² over n floats. */
static inline __attribute__((always_inline)) float row_sumsq(const float *row, size_t n, float mean)
{
    float acc[LANES] = {0};
    size_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) {
            const float t = row[i + j] - mean;
            acc[j] += t * t;
        }
    for (; i < n; i++) {
        const float t = row[i] - mean;
        acc[0] += t * t;
    }
    return lanes_sum(acc);
}

/* Batch mean and biased variance of channel c, in double. */
static inline __attribute__((always_inline)) void channel_stats(const float *in, int c, const bn_dims *d, double *mean, double *var)
{
    const size_t HW = (size_t)d->hw, CHW = (size_t)d->c * HW;
    const double M = (double)d->n * (double)HW;
    const float shift = in[(size_t)c * HW];
    double s = 0.0;
    for (int n = 0; n < d->n; n++)
        s += row_sum(in + (size_t)n * CHW + (size_t)c * HW, HW, shift);
    const double mu = shift + s / M;
    const float mf = (float)mu;
    double ss = 0.0;
    for (int n = 0; n < d->n; n++)
        ss += row_sumsq(in + (size_t)n * CHW + (size_t)c * HW, HW, mf);
    *mean = mu;
    *var = ss / M;
}

/* What follows batch norm in a fused call. */
typedef struct {
    int relu;         /* max(·, 0) */
    float p;          /* dropout rate (0: none) */
    uint64_t key;     /* dropout key (act.h) */
    const float *add; /* (N,C,HW) added last, or NULL */
} bn_post;

/* out[c] = post(bn(in[c])) with scale/shift of channel c. One loop per combination, so that
 * each is a plain vectorisable loop. */
static inline __attribute__((always_inline)) void channel_apply(float *out, const float *in, int c, float m, float is, float g, float b,
                          const bn_post *post, const bn_dims *d)
{
    const size_t HW = (size_t)d->hw, CHW = (size_t)d->c * HW;
    const int relu = post->relu;
    const float p = post->p, keep = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
    const uint64_t key = post->key;
    const uint32_t drop = lm_dropout_threshold(p);
    for (int n = 0; n < d->n; n++) {
        const size_t base = (size_t)n * CHW + (size_t)c * HW;
        const float *restrict x = in + base;
        float *restrict y = out + base; /* out == in is fine: element i only reads x[i] first */
        const float *a = post->add ? post->add + base : NULL;
        if (!relu) {
#pragma omp simd
            for (size_t i = 0; i < HW; i++)
                y[i] = lm_bn_apply(x[i], m, is, g, b);
        } else if (p > 0.0f) { /* relu, dropout (+ add); drop = lm_uniform01 < p, as integers */
            for (size_t i = 0; i < HW; i++) {
                const float v = lm_relu(lm_bn_apply(x[i], m, is, g, b)) *
                                (lm_bits24(key, base + i) < drop ? 0.0f : keep);
                y[i] = a ? v + a[i] : v;
            }
        } else if (a) {
#pragma omp simd
            for (size_t i = 0; i < HW; i++)
                y[i] = lm_relu(lm_bn_apply(x[i], m, is, g, b)) + a[i];
        } else {
#pragma omp simd
            for (size_t i = 0; i < HW; i++)
                y[i] = lm_relu(lm_bn_apply(x[i], m, is, g, b));
        }
    }
}

/* One channel of the training forward: statistics, running update, apply. */
HOT static void train_channel(float *out, const float *in, const float *gamma, const float *beta,
                              float *mean, float *invstd, float *run_mean, float *run_var,
                              const bn_post *post, const bn_dims *d, int c)
{
    const double M = (double)d->n * (double)d->hw;
    double mu, var;
    channel_stats(in, c, d, &mu, &var);
    const float m = (float)mu, is = (float)(1.0 / sqrt(var + d->eps));
    mean[c] = m;
    invstd[c] = is;
    run_mean[c] = lm_running(run_mean[c], m, d->momentum);
    run_var[c] = lm_running(run_var[c], (float)(M > 1.0 ? var * M / (M - 1.0) : var),
                            d->momentum);
    channel_apply(out, in, c, m, is, gamma[c], beta[c], post, d);
}

HOT static void infer_channel(float *out, const float *in, const float *gamma, const float *beta,
                              const float *run_mean, const float *run_var, const bn_post *post,
                              const bn_dims *d, int c)
{
    const float m = run_mean[c], is = 1.0f / sqrtf(run_var[c] + d->eps);
    channel_apply(out, in, c, m, is, gamma[c], beta[c], post, d);
}

static void forward_train(float *out, const float *in, const float *gamma, const float *beta,
                          float *mean, float *invstd, float *run_mean, float *run_var,
                          const bn_post *post, const bn_dims *d)
{
#pragma omp parallel for schedule(static) num_threads(compute_threads())
    for (int c = 0; c < d->c; c++)
        train_channel(out, in, gamma, beta, mean, invstd, run_mean, run_var, post, d, c);
}

static void forward_infer(float *out, const float *in, const float *gamma, const float *beta,
                          const float *run_mean, const float *run_var, const bn_post *post,
                          const bn_dims *d)
{
#pragma omp parallel for schedule(static) num_threads(compute_threads())
    for (int c = 0; c < d->c; c++)
        infer_channel(out, in, gamma, beta, run_mean, run_var, post, d, c);
}

void bn_forward_train(float *out, const float *in, const float *gamma, const float *beta,
                      float *mean, float *invstd, float *run_mean, float *run_var,
                      const bn_dims *d)
{
    const bn_post post = {0, 0.0f, 0, NULL};
    forward_train(out, in, gamma, beta, mean, invstd, run_mean, run_var, &post, d);
}

void bn_forward_infer(float *out, const float *in, const float *gamma, const float *beta,
                      const float *run_mean, const float *run_var, const bn_dims *d)
{
    const bn_post post = {0, 0.0f, 0, NULL};
    forward_infer(out, in, gamma, beta, run_mean, run_var, &post, d);
}

void bn_relu_forward_train(float *out, const float *in, const float *add, float p, uint64_t key,
                           const float *gamma, const float *beta, float *mean, float *invstd,
                           float *run_mean, float *run_var, const bn_dims *d)
{
    const bn_post post = {1, p, key, add};
    forward_train(out, in, gamma, beta, mean, invstd, run_mean, run_var, &post, d);
}

void bn_relu_forward_infer(float *out, const float *in, const float *add, const float *gamma,
                           const float *beta, const float *run_mean, const float *run_var,
                           const bn_dims *d)
{
    const bn_post post = {1, 0.0f, 0, add};
    forward_infer(out, in, gamma, beta, run_mean, run_var, &post, d);
}

/* ---- backward ---------------------------------------------------------------------------- */

/* How the gradient reaching batch norm is formed from dout: dy = dout (MASK_NONE); through the
 * fused ReLU (and dropout), dy = dout·keep where the fused output `out` > 0 (MASK_FROM_OUT), or
 * dy = dout where gamma·xhat + beta > 0, recomputed from in (MASK_RECOMPUTE). */
enum { MASK_NONE, MASK_FROM_OUT, MASK_RECOMPUTE };

static inline __attribute__((always_inline)) float masked_dy(int mode, float dy, float x, float o,
                                                             float keep, float m, float is,
                                                             float g, float b)
{
    /* Selects between two values, not branches: the mask is data, and a branch on it would be
     * mispredicted half the time. */
    if (mode == MASK_FROM_OUT)
        return dy * (o > 0.0f ? keep : 0.0f);
    if (mode == MASK_RECOMPUTE)
        return lm_relu_grad(dy, lm_bn_apply(x, m, is, g, b));
    return dy;
}

/* The same with LANES floats at a time (GCC vector extension: one AVX register in the AVX2
 * clone, two SSE registers in the baseline one). A comparison gives an all-ones/zero mask per
 * lane, so the ReLU/dropout mask is an AND, never a branch. */
/* The helpers below are always inlined, so the ABI note GCC gives for passing 32-byte vectors
 * to a function of the baseline build does not apply. */
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float vfloat __attribute__((vector_size(LANES * sizeof(float))));
typedef int32_t vint __attribute__((vector_size(LANES * sizeof(int32_t))));

static inline __attribute__((always_inline)) vfloat vload(const float *p)
{
    vfloat v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline __attribute__((always_inline)) vfloat vsplat(float x)
{
    return (vfloat){0} + x;
}

static inline __attribute__((always_inline)) vfloat masked_dy_v(int mode, const float *dyp,
                                                                const float *xp, const float *op,
                                                                float keep, float m, float is,
                                                                float g, float b)
{
    const vfloat dy = vload(dyp), x = vload(xp), o = vload(op);
    if (mode == MASK_FROM_OUT)
        return (vfloat)((vint)(dy * keep) & (o > 0.0f));
    if (mode == MASK_RECOMPUTE)
        return (vfloat)((vint)dy & ((g * ((x - m) * is) + b) > 0.0f)); /* lm_bn_apply > 0 */
    return dy;
}

/* One channel's backward; mode and accumulate are constants at every call site, so each use is
 * compiled into its own loops. Lane j of the sums takes elements j, j+LANES, ... of each row,
 * the row's tail goes to lane 0 (see LANES). */
static inline __attribute__((always_inline)) void
channel_backward(float *din, float *dgamma, float *dbeta, const float *dout, const float *in,
                 const float *outp, float keep, int c, float g, float b, float m, float is,
                 int mode, int accumulate, const bn_dims *d)
{
    const size_t HW = (size_t)d->hw, CHW = (size_t)d->c * HW;
    const double M = (double)d->n * (double)HW;
    double sdy = 0.0, sdyx = 0.0; /* Σ dy and Σ dy·xhat over the channel */
    for (int n = 0; n < d->n; n++) {
        const size_t base = (size_t)n * CHW + (size_t)c * HW;
        const float *x = in + base, *dy = dout + base, *o = outp ? outp + base : x;
        if (n + 1 < d->n) {
            prefetch_row(x + CHW, HW);
            prefetch_row(dy + CHW, HW);
            if (outp)
                prefetch_row(o + CHW, HW);
        }
        vfloat a1 = {0}, a2 = {0};
        size_t i = 0;
        for (; i + LANES <= HW; i += LANES) {
            const vfloat xv = vload(x + i);
            const vfloat t = masked_dy_v(mode, dy + i, x + i, o + i, keep, m, is, g, b);
            a1 += t;
            a2 += t * ((xv - m) * is);
        }
        for (; i < HW; i++) {
            const float t = masked_dy(mode, dy[i], x[i], o[i], keep, m, is, g, b);
            a1[0] += t;
            a2[0] += t * ((x[i] - m) * is);
        }
        float l1[LANES], l2[LANES];
        memcpy(l1, &a1, sizeof l1);
        memcpy(l2, &a2, sizeof l2);
        sdy += lanes_sum(l1);
        sdyx += lanes_sum(l2);
    }
    if (dgamma)
        dgamma[c] += (float)sdyx;
    if (dbeta)
        dbeta[c] += (float)sdy;
    if (!din)
        return;
    const float mdy = (float)(sdy / M), mdyx = (float)(sdyx / M), gis = g * is;
    for (int n = 0; n < d->n; n++) {
        const size_t base = (size_t)n * CHW + (size_t)c * HW;
        const float *x = in + base, *dy = dout + base, *o = outp ? outp + base : x;
        float *dx = din + base;
        size_t i = 0;
        for (; i + LANES <= HW; i += LANES) { /* lm_bn_grad, LANES at a time */
            const vfloat xv = vload(x + i);
            const vfloat t = masked_dy_v(mode, dy + i, x + i, o + i, keep, m, is, g, b);
            vfloat v = vsplat(gis) * ((t - mdy) - ((xv - m) * is) * mdyx);
            if (accumulate)
                v = vload(dx + i) + v;
            memcpy(dx + i, &v, sizeof v);
        }
        for (; i < HW; i++) {
            const float v = lm_bn_grad(masked_dy(mode, dy[i], x[i], o[i], keep, m, is, g, b), x[i],
                                       m, is, g, mdy, mdyx);
            dx[i] = accumulate ? dx[i] + v : v;
        }
    }
}

/* The three uses of channel_backward, each compiled with its mode fixed. */
HOT static void backward_plain(float *din, float *dgamma, float *dbeta, const float *dout,
                               const float *in, const float *gamma, const float *mean,
                               const float *invstd, const bn_dims *d, int c)
{
    channel_backward(din, dgamma, dbeta, dout, in, NULL, 1.0f, c, gamma[c], 0.0f, mean[c],
                     invstd[c], MASK_NONE, 1, d);
}

HOT static void backward_relu_out(float *din, float *dgamma, float *dbeta, const float *dout,
                                  const float *in, const float *out, float keep,
                                  const float *gamma, const float *beta, const float *mean,
                                  const float *invstd, const bn_dims *d, int c)
{
    channel_backward(din, dgamma, dbeta, dout, in, out, keep, c, gamma[c], beta[c], mean[c],
                     invstd[c], MASK_FROM_OUT, 0, d);
}

HOT static void backward_relu_recompute(float *din, float *dgamma, float *dbeta,
                                        const float *dout, const float *in, const float *gamma,
                                        const float *beta, const float *mean,
                                        const float *invstd, const bn_dims *d, int c)
{
    channel_backward(din, dgamma, dbeta, dout, in, NULL, 1.0f, c, gamma[c], beta[c], mean[c],
                     invstd[c], MASK_RECOMPUTE, 0, d);
}

void bn_backward(float *din, float *dgamma, float *dbeta, const float *dout, const float *in,
                 const float *gamma, const float *mean, const float *invstd, const bn_dims *d)
{
#pragma omp parallel for schedule(static) num_threads(compute_threads())
    for (int c = 0; c < d->c; c++)
        backward_plain(din, dgamma, dbeta, dout, in, gamma, mean, invstd, d, c);
}

void bn_relu_backward(float *din, float *dgamma, float *dbeta, const float *dout,
                      const float *in, const float *out, float p, const float *gamma,
                      const float *beta, const float *mean, const float *invstd,
                      const bn_dims *d)
{
    const float keep = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
#pragma omp parallel for schedule(static) num_threads(compute_threads())
    for (int c = 0; c < d->c; c++) {
        if (out)
            backward_relu_out(din, dgamma, dbeta, dout, in, out, keep, gamma, beta, mean, invstd,
                              d, c);
        else
            backward_relu_recompute(din, dgamma, dbeta, dout, in, gamma, beta, mean, invstd, d, c);
    }
}
