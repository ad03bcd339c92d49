/* bn_c16.c — batch norm fused with ReLU, dropout and the residual add on nChw16c activations.
 * See blocked16.h. Public: bn_relu_forward_train_c16, bn_relu_forward_infer_c16,
 *         bn_relu_backward_c16.
 *
 * A pixel of a channel block is 16 consecutive floats, one per channel: every inner loop runs
 * over those 16 lanes (one AVX-512 vector), with per-lane (per-channel) constants, so the
 * per-channel sums need no horizontal reduction. The reductions (statistics and backward sums)
 * add each image's pixels in float (P partial sums; shifted by the channel's first value as
 * bn.c does) and the images in double, in G fixed groups of images whose sums are added in
 * order; (block, group) pairs run in parallel, the element-wise passes over (image, block)
 * pairs. Neither depends on the thread count.
 */
#include "nn/blocked16.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "base/threads.h"
#include "nn/layer_math.h"

#define L BLOCK16

/* AVX-512 and AVX2 clones beside the baseline, as in bn.c (the dropout hash multiplies 64-bit
 * integers, which only AVX-512 does in vectors); no FMA contraction under -std=c11, so all
 * clones give the same bits. */
#define HOT __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))

/* Per-channel constants of one block for the element-wise passes. */
typedef struct {
    float m[L], is[L], g[L], b[L];
} block_consts;

/* What follows batch norm (bn.c's bn_post). */
typedef struct {
    float p;          /* dropout rate (0: none) */
    uint64_t key;     /* dropout key (act.h) */
    const float *add; /* nChw16c, added last, or NULL */
} post_ops;

/* An image's pixels go into P partial sums per channel (pixel i into partial i % P, the tail
 * into partial 0), added in order at the end: each float sum then takes at most 196 terms at
 * 28x28 (bn.c's 8 lanes take 98), and the P chains run in parallel. */
#define P 4

static inline __attribute__((always_inline)) float partials_sum(float acc[P][L], int j)
{
    float t = 0.0f;
    for (int q = 0; q < P; q++)
        t += acc[q][j];
    return t;
}

/* The reductions split the batch into G fixed groups of images (not one per thread): the
 * (block, group) pairs run in parallel even on a layer of one block, and the groups' sums are
 * added in group order, so results do not depend on the thread count. */
#define G 4

static int group_start(int N, int g) { return (int)((long)N * g / G); }

/* out[j] = Σ over images [n0, n1) of block cb of (x − c[j]) (square = 0) or (x − c[j])²,
 * each image in float (P partial sums), the images in double. */
static inline __attribute__((always_inline)) void image_sums(double *out, const float *in, int cb,
                                                             const float *c, int square, int n0,
                                                             int n1, const bn_dims *d)
{
    const size_t HW = (size_t)d->hw, CB = (size_t)d->c / L;
    for (int j = 0; j < L; j++)
        out[j] = 0.0;
    for (int n = n0; n < n1; n++) {
        const float *x = in + ((size_t)n * CB + (size_t)cb) * HW * L;
        float acc[P][L] = {{0}};
        size_t i = 0;
        for (; i + P <= HW; i += P)
            for (int q = 0; q < P; q++)
#pragma omp simd
                for (int j = 0; j < L; j++) {
                    const float t = x[(i + q) * L + j] - c[j];
                    acc[q][j] += square ? t * t : t;
                }
        for (; i < HW; i++)
#pragma omp simd
            for (int j = 0; j < L; j++) {
                const float t = x[i * L + j] - c[j];
                acc[0][j] += square ? t * t : t;
            }
        for (int j = 0; j < L; j++)
            out[j] += partials_sum(acc, j);
    }
}

HOT static void sums_task(double *out, const float *in, int cb, const float *c, int square,
                          int g, const bn_dims *d)
{
    const int n0 = group_start(d->n, g), n1 = group_start(d->n, g + 1);
    if (square)
        image_sums(out, in, cb, c, 1, n0, n1, d);
    else
        image_sums(out, in, cb, c, 0, n0, n1, d);
}

/* Up to 64 blocks (1024 channels) of constants and sums on the stack; wider layers go in
 * groups of 64 blocks. */
#define MAX_BLOCKS 64

/* Statistics of blocks c0 .. c0+nb−1 (bn.c's train_channel: shifted two-pass mean and biased
 * variance, running update with the unbiased one), constants into k. */
static void train_stats(const float *in, const float *gamma, const float *beta, float *mean,
                        float *invstd, float *run_mean, float *run_var, block_consts *k, int c0,
                        int nb, const bn_dims *d)
{
    const size_t HW = (size_t)d->hw;
    const double M = (double)d->n * (double)HW;
    double part[MAX_BLOCKS][G][L]; /* 32 KB */
    float shift[MAX_BLOCKS][L], mf[MAX_BLOCKS][L];
    double mu[MAX_BLOCKS][L];
    for (int cb = 0; cb < nb; cb++) /* each channel's first value: image 0, pixel 0 */
        memcpy(shift[cb], in + (size_t)(c0 + cb) * HW * L, sizeof shift[cb]);
#pragma omp parallel for schedule(static) num_threads(compute_threads())
    for (int t = 0; t < nb * G; t++)
        sums_task(part[t / G][t % G], in, c0 + t / G, shift[t / G], 0, t % G, d);
    for (int cb = 0; cb < nb; cb++)
        for (int j = 0; j < L; j++) {
            double s = 0.0;
            for (int g = 0; g < G; g++)
                s += part[cb][g][j];
            mu[cb][j] = shift[cb][j] + s / M;
            mf[cb][j] = (float)mu[cb][j];
        }
#pragma omp parallel for schedule(static) num_threads(compute_threads())
    for (int t = 0; t < nb * G; t++)
        sums_task(part[t / G][t % G], in, c0 + t / G, mf[t / G], 1, t % G, d);
    for (int cb = 0; cb < nb; cb++)
        for (int j = 0; j < L; j++) {
            double ss = 0.0;
            for (int g = 0; g < G; g++)
                ss += part[cb][g][j];
            const double var = ss / M;
            const int c = (c0 + cb) * L + j;
            const float m = (float)mu[cb][j], is = (float)(1.0 / sqrt(var + d->eps));
            mean[c] = m;
            invstd[c] = is;
            run_mean[c] = lm_running(run_mean[c], m, d->momentum);
            run_var[c] = lm_running(run_var[c], (float)(M > 1.0 ? var * M / (M - 1.0) : var),
                                    d->momentum);
            k[cb].m[j] = m;
            k[cb].is[j] = is;
            k[cb].g[j] = gamma[c];
            k[cb].b[j] = beta[c];
        }
}

/* out = relu(bn(in)) (· dropout) (+ add) for image n, block cb: bn.c's channel_apply. */
HOT static void apply_block(float *out, const float *in, const block_consts *k,
                            const post_ops *po, const bn_dims *d, int n, int cb)
{
    const size_t HW = (size_t)d->hw, CB = (size_t)d->c / L;
    const size_t at = ((size_t)n * CB + (size_t)cb) * HW * L;
    const float *restrict x = in + at;
    float *restrict y = out + at; /* out == in is fine: each element reads its x first */
    const float *a = po->add ? po->add + at : NULL;
    const float p = po->p, keep = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
    const uint64_t key = po->key;
    const uint32_t drop = lm_dropout_threshold(p);
    /* flat NCHW index of (n, cb·16 + j, pixel 0) */
    const uint64_t base = (uint64_t)n * d->c * HW + (uint64_t)cb * L * HW;
    if (p > 0.0f) { /* relu, dropout (+ add); drop = lm_uniform01 < p, as integers */
        for (size_t i = 0; i < HW; i++) {
            float v[L];
#pragma omp simd
            for (int j = 0; j < L; j++)
                v[j] = lm_relu(lm_bn_apply(x[i * L + j], k->m[j], k->is[j], k->g[j], k->b[j])) *
                       (lm_bits24(key, base + (uint64_t)j * HW + i) < drop ? 0.0f : keep);
            if (a) {
#pragma omp simd
                for (int j = 0; j < L; j++)
                    y[i * L + j] = v[j] + a[i * L + j];
            } else {
                memcpy(y + i * L, v, sizeof v);
            }
        }
    } else if (a) {
        for (size_t i = 0; i < HW; i++)
#pragma omp simd
            for (int j = 0; j < L; j++)
                y[i * L + j] = lm_relu(lm_bn_apply(x[i * L + j], k->m[j], k->is[j], k->g[j],
                                                   k->b[j])) + a[i * L + j];
    } else {
        for (size_t i = 0; i < HW; i++)
#pragma omp simd
            for (int j = 0; j < L; j++)
                y[i * L + j] = lm_relu(lm_bn_apply(x[i * L + j], k->m[j], k->is[j], k->g[j],
                                                   k->b[j]));
    }
}

/* The element-wise pass over every (image, block) pair. */
static void apply_all(float *out, const float *in, const block_consts *k, const post_ops *po,
                      const bn_dims *d)
{
    const int CB = d->c / L;
    const long pairs = (long)d->n * CB;
#pragma omp parallel for schedule(static) num_threads(compute_threads())
    for (long q = 0; q < pairs; q++)
        apply_block(out, in, &k[q % CB], po, d, (int)(q / CB), (int)(q % CB));
}

void bn_relu_forward_train_c16(float *out, const float *in, const float *add, float p,
                               uint64_t key, const float *gamma, const float *beta, float *mean,
                               float *invstd, float *run_mean, float *run_var, const bn_dims *d)
{
    const post_ops po = {p, key, add};
    block_consts k[MAX_BLOCKS];
    const int CB = d->c / L;
    for (int c0 = 0; c0 < CB; c0 += MAX_BLOCKS) {
        const int nb = CB - c0 < MAX_BLOCKS ? CB - c0 : MAX_BLOCKS;
        train_stats(in, gamma, beta, mean, invstd, run_mean, run_var, k, c0, nb, d);
        if (nb == CB) {
            apply_all(out, in, k, &po, d);
        } else { /* a group of blocks: apply block by block */
            for (int n = 0; n < d->n; n++)
                for (int cb = 0; cb < nb; cb++)
                    apply_block(out, in, &k[cb], &po, d, n, c0 + cb);
        }
    }
}

void bn_relu_forward_infer_c16(float *out, const float *in, const float *add,
                               const float *gamma, const float *beta, const float *run_mean,
                               const float *run_var, const bn_dims *d)
{
    const post_ops po = {0.0f, 0, add};
    block_consts k[MAX_BLOCKS];
    const int CB = d->c / L;
    for (int c0 = 0; c0 < CB; c0 += MAX_BLOCKS) {
        const int nb = CB - c0 < MAX_BLOCKS ? CB - c0 : MAX_BLOCKS;
        for (int cb = 0; cb < nb; cb++)
            for (int j = 0; j < L; j++) { /* bn.c's infer_channel */
                const int c = (c0 + cb) * L + j;
                k[cb].m[j] = run_mean[c];
                k[cb].is[j] = 1.0f / sqrtf(run_var[c] + d->eps);
                k[cb].g[j] = gamma[c];
                k[cb].b[j] = beta[c];
            }
        if (nb == CB)
            apply_all(out, in, k, &po, d);
        else
            for (int n = 0; n < d->n; n++)
                for (int cb = 0; cb < nb; cb++)
                    apply_block(out, in, &k[cb], &po, d, n, c0 + cb);
    }
}

/* ---- backward ---------------------------------------------------------------------------- */

/* The gradient reaching batch norm through the fused ReLU/dropout: from the fused output o
 * (> 0 where the element passed both; keep = 1/(1-p)) or, with no output, recomputed from x
 * (bn.c's masked_dy). */
static inline __attribute__((always_inline)) float mdy(int from_out, float dy, float x, float o,
                                                       float keep, float m, float is, float g,
                                                       float b)
{
    if (from_out)
        return dy * (o > 0.0f ? keep : 0.0f);
    return lm_relu_grad(dy, lm_bn_apply(x, m, is, g, b));
}

/* Σ dy and Σ dy·xhat of block cb over images [n0, n1) (per channel; each image in float, P
 * partial sums, the images in double). */
static inline __attribute__((always_inline)) void
block_sums(float *tout, const float *dout, const float *in, const float *outp, float keep,
           const block_consts *k, const bn_dims *d, int cb, int n0, int n1, double *sdy,
           double *sdyx)
{
    const size_t HW = (size_t)d->hw, CB = (size_t)d->c / L;
    const int from_out = outp != NULL;
    for (int j = 0; j < L; j++)
        sdy[j] = sdyx[j] = 0.0;
    for (int n = n0; n < n1; n++) {
        const size_t at = ((size_t)n * CB + (size_t)cb) * HW * L;
        const float *x = in + at, *dy = dout + at, *o = from_out ? outp + at : x;
        float *tt = tout ? tout + at : NULL;
        float a1[P][L] = {{0}}, a2[P][L] = {{0}};
        size_t i = 0;
        for (; i + P <= HW; i += P)
            for (int q = 0; q < P; q++)
#pragma omp simd
                for (int j = 0; j < L; j++) {
                    const size_t e = (i + q) * L + (size_t)j;
                    const float t = mdy(from_out, dy[e], x[e], o[e], keep, k->m[j], k->is[j],
                                        k->g[j], k->b[j]);
                    if (tt)
                        tt[e] = t;
                    a1[q][j] += t;
                    a2[q][j] += t * ((x[e] - k->m[j]) * k->is[j]);
                }
        for (; i < HW; i++)
#pragma omp simd
            for (int j = 0; j < L; j++) {
                const size_t e = i * L + (size_t)j;
                const float t = mdy(from_out, dy[e], x[e], o[e], keep, k->m[j], k->is[j], k->g[j],
                                    k->b[j]);
                if (tt)
                    tt[e] = t;
                a1[0][j] += t;
                a2[0][j] += t * ((x[e] - k->m[j]) * k->is[j]);
            }
        for (int j = 0; j < L; j++) {
            sdy[j] += partials_sum(a1, j);
            sdyx[j] += partials_sum(a2, j);
        }
    }
}

/* Group g of the images of block cb (see G); the masked dy goes to tout (din: the second pass
 * then reads two tensors, not three). */
HOT static void backward_sums_task(double *sdy, double *sdyx, float *tout, const float *dout,
                                   const float *in, const float *outp, float keep,
                                   const block_consts *k, const bn_dims *d, int cb, int g)
{
    const int n0 = group_start(d->n, g), n1 = group_start(d->n, g + 1);
    /* each combination its own loops (tout NULL: only dgamma/dbeta are wanted) */
    if (outp && tout)
        block_sums(tout, dout, in, outp, keep, k, d, cb, n0, n1, sdy, sdyx);
    else if (outp)
        block_sums(NULL, dout, in, outp, keep, k, d, cb, n0, n1, sdy, sdyx);
    else if (tout)
        block_sums(tout, dout, in, NULL, keep, k, d, cb, n0, n1, sdy, sdyx);
    else
        block_sums(NULL, dout, in, NULL, keep, k, d, cb, n0, n1, sdy, sdyx);
}

/* din = lm_bn_grad(masked dy) for image n, block cb; din holds the masked dy (first pass). */
HOT static void backward_block(float *din, const float *in, const block_consts *k,
                               const float *means, const bn_dims *d, int n, int cb)
{
    const size_t HW = (size_t)d->hw, CB = (size_t)d->c / L;
    const size_t at = ((size_t)n * CB + (size_t)cb) * HW * L;
    const float *x = in + at;
    float *dx = din + at;
    for (size_t i = 0; i < HW; i++)
#pragma omp simd
        for (int j = 0; j < L; j++)
            dx[i * L + j] = lm_bn_grad(dx[i * L + j], x[i * L + j], k->m[j], k->is[j], k->g[j],
                                       means[j], means[L + j]);
}

void bn_relu_backward_c16(float *din, float *dgamma, float *dbeta, const float *dout,
                          const float *in, const float *out, float p, const float *gamma,
                          const float *beta, const float *mean, const float *invstd,
                          const bn_dims *d)
{
    const float keep = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
    const int CB = d->c / L;
    block_consts k[MAX_BLOCKS];
    float means[MAX_BLOCKS][2 * L]; /* per block: mean dy, then mean dy·xhat */
    double p1[MAX_BLOCKS][G][L], p2[MAX_BLOCKS][G][L]; /* Σ dy, Σ dy·xhat per image group */
    for (int c0 = 0; c0 < CB; c0 += MAX_BLOCKS) {
        const int nb = CB - c0 < MAX_BLOCKS ? CB - c0 : MAX_BLOCKS;
        for (int cb = 0; cb < nb; cb++)
            for (int j = 0; j < L; j++) {
                const int c = (c0 + cb) * L + j;
                k[cb].m[j] = mean[c];
                k[cb].is[j] = invstd[c];
                k[cb].g[j] = gamma[c];
                k[cb].b[j] = beta[c];
            }
#pragma omp parallel for schedule(static) num_threads(compute_threads())
        for (int t = 0; t < nb * G; t++)
            backward_sums_task(p1[t / G][t % G], p2[t / G][t % G], din, dout,
                               in, out, keep, &k[t / G], d, c0 + t / G, t % G);
        const double M = (double)d->n * (double)d->hw;
        for (int cb = 0; cb < nb; cb++)
            for (int j = 0; j < L; j++) {
                double sdy = 0.0, sdyx = 0.0;
                for (int g = 0; g < G; g++)
                    sdy += p1[cb][g][j], sdyx += p2[cb][g][j];
                const int c = (c0 + cb) * L + j;
                if (dgamma)
                    dgamma[c] += (float)sdyx;
                if (dbeta)
                    dbeta[c] += (float)sdy;
                means[cb][j] = (float)(sdy / M);
                means[cb][L + j] = (float)(sdyx / M);
            }
        if (!din)
            continue;
        const long pairs = (long)d->n * nb;
#pragma omp parallel for schedule(static) num_threads(compute_threads())
        for (long q = 0; q < pairs; q++) {
            const int cb = (int)(q % nb);
            backward_block(din, in, &k[cb], means[cb], d, (int)(q / nb), c0 + cb);
        }
    }
}
