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
#include "bn.h"

#include <math.h>
#include <stddef.h>

#include "layer_math.h"
#include "threads.h"

/* Sum of row[i] − shift over n floats, in float (vectorised; n ≤ a few thousand). */
static inline float row_sum(const float *row, size_t n, float shift)
{
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (size_t i = 0; i < n; i++)
        s += row[i] - shift;
    return s;
}

static inline float row_sumsq(const float *row, size_t n, float mean)
{
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (size_t i = 0; i < n; i++) {
        const float t = row[i] - mean;
        s += t * t;
    }
    return s;
}

/* Batch mean and biased variance of channel c, in double. */
static void channel_stats(const float *in, int c, const bn_dims *d, double *mean, double *var)
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
    /* Σ(x − mf)² = Σ(x − mu)² + M·(mu − mf)²: remove the rounding of the mean. */
    const double dm = mu - (double)mf;
    double v = ss / M - dm * dm;
    *mean = mu;
    *var = v > 0.0 ? v : 0.0;
}

/* What follows batch norm in a fused call. */
typedef struct {
    int relu;         /* max(·, 0) */
    float p;          /* dropout rate (0: none) */
    uint64_t key;     /* dropout key (act.h) */
    const float *add; /* (N,C,HW) added last, or NULL */
} bn_post;

/* out[c] = post(bn(in[c])) with scale/shift of channel c. */
static void channel_apply(float *out, const float *in, int c, float m, float is, float g, float b,
                          const bn_post *post, const bn_dims *d)
{
    const size_t HW = (size_t)d->hw, CHW = (size_t)d->c * HW;
    const float keep = post->p > 0.0f ? 1.0f / (1.0f - post->p) : 1.0f;
    for (int n = 0; n < d->n; n++) {
        const size_t base = (size_t)n * CHW + (size_t)c * HW;
        const float *x = in + base;
        float *y = out + base;
        const float *a = post->add ? post->add + base : NULL;
        if (!post->relu && post->p == 0.0f && !a) {
#pragma omp simd
            for (size_t i = 0; i < HW; i++)
                y[i] = lm_bn_apply(x[i], m, is, g, b);
            continue;
        }
        if (post->p == 0.0f) {
            if (a) {
#pragma omp simd
                for (size_t i = 0; i < HW; i++)
                    y[i] = lm_relu(lm_bn_apply(x[i], m, is, g, b)) + a[i];
            } else {
#pragma omp simd
                for (size_t i = 0; i < HW; i++)
                    y[i] = lm_relu(lm_bn_apply(x[i], m, is, g, b));
            }
            continue;
        }
        for (size_t i = 0; i < HW; i++) {
            float v = lm_relu(lm_bn_apply(x[i], m, is, g, b));
            v *= lm_uniform01(post->key, base + i) < post->p ? 0.0f : keep;
            y[i] = a ? v + a[i] : v;
        }
    }
}

static void forward_train(float *out, const float *in, const float *gamma, const float *beta,
                          float *mean, float *invstd, float *run_mean, float *run_var,
                          const bn_post *post, const bn_dims *d)
{
    const double M = (double)d->n * (double)d->hw;
#pragma omp parallel for schedule(static) num_threads(compute_threads())
    for (int c = 0; c < d->c; c++) {
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
}

static void forward_infer(float *out, const float *in, const float *gamma, const float *beta,
                          const float *run_mean, const float *run_var, const bn_post *post,
                          const bn_dims *d)
{
#pragma omp parallel for schedule(static) num_threads(compute_threads())
    for (int c = 0; c < d->c; c++) {
        const float m = run_mean[c], is = 1.0f / sqrtf(run_var[c] + d->eps);
        channel_apply(out, in, c, m, is, gamma[c], beta[c], post, d);
    }
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

/* How the gradient reaching batch norm is formed from dout: dy = dout (mode NONE); through the
 * fused ReLU (and dropout), dy = dout·keep where the fused output `out` > 0 (mode FROM_OUT), or
 * dy = dout where gamma·xhat + beta > 0, recomputed from in (mode RECOMPUTE). */
enum { MASK_NONE, MASK_FROM_OUT, MASK_RECOMPUTE };

typedef struct {
    int mode;
    const float *out;
    float keep; /* 1/(1−p) */
    int accumulate; /* din += (else din =) */
} bn_grad_in;

static inline float masked_dy(const bn_grad_in *gi, float dy, float x, float o, float m, float is,
                              float g, float b)
{
    if (gi->mode == MASK_FROM_OUT)
        return o > 0.0f ? dy * gi->keep : 0.0f;
    if (gi->mode == MASK_RECOMPUTE)
        return lm_bn_apply(x, m, is, g, b) > 0.0f ? dy : 0.0f;
    return dy;
}

static void backward(float *din, float *dgamma, float *dbeta, const float *dout, const float *in,
                     const float *gamma, const float *beta, const float *mean,
                     const float *invstd, const bn_grad_in *gi, const bn_dims *d)
{
    const size_t HW = (size_t)d->hw, CHW = (size_t)d->c * HW;
    const double M = (double)d->n * (double)HW;
#pragma omp parallel for schedule(static) num_threads(compute_threads())
    for (int c = 0; c < d->c; c++) {
        const float m = mean[c], is = invstd[c], g = gamma[c], b = beta ? beta[c] : 0.0f;
        double sdy = 0.0, sdyx = 0.0; /* Σ dy and Σ dy·xhat over the channel */
        for (int n = 0; n < d->n; n++) {
            const size_t base = (size_t)n * CHW + (size_t)c * HW;
            const float *x = in + base, *dy = dout + base;
            const float *o = gi->out ? gi->out + base : x;
            float s1 = 0.0f, s2 = 0.0f;
#pragma omp simd reduction(+ : s1, s2)
            for (size_t i = 0; i < HW; i++) {
                const float t = masked_dy(gi, dy[i], x[i], o[i], m, is, g, b);
                s1 += t;
                s2 += t * ((x[i] - m) * is);
            }
            sdy += s1;
            sdyx += s2;
        }
        if (dgamma)
            dgamma[c] += (float)sdyx;
        if (dbeta)
            dbeta[c] += (float)sdy;
        if (!din)
            continue;
        const float mdy = (float)(sdy / M), mdyx = (float)(sdyx / M);
        for (int n = 0; n < d->n; n++) {
            const size_t base = (size_t)n * CHW + (size_t)c * HW;
            const float *x = in + base, *dy = dout + base;
            const float *o = gi->out ? gi->out + base : x;
            float *dx = din + base;
            if (gi->accumulate) {
#pragma omp simd
                for (size_t i = 0; i < HW; i++)
                    dx[i] += lm_bn_grad(masked_dy(gi, dy[i], x[i], o[i], m, is, g, b), x[i], m,
                                        is, g, mdy, mdyx);
            } else {
#pragma omp simd
                for (size_t i = 0; i < HW; i++)
                    dx[i] = lm_bn_grad(masked_dy(gi, dy[i], x[i], o[i], m, is, g, b), x[i], m,
                                       is, g, mdy, mdyx);
            }
        }
    }
}

void bn_backward(float *din, float *dgamma, float *dbeta, const float *dout, const float *in,
                 const float *gamma, const float *mean, const float *invstd, const bn_dims *d)
{
    const bn_grad_in gi = {MASK_NONE, NULL, 1.0f, 1};
    backward(din, dgamma, dbeta, dout, in, gamma, NULL, mean, invstd, &gi, d);
}

void bn_relu_backward(float *din, float *dgamma, float *dbeta, const float *dout,
                      const float *in, const float *out, float p, const float *gamma,
                      const float *beta, const float *mean, const float *invstd,
                      const bn_dims *d)
{
    const bn_grad_in gi = {out ? MASK_FROM_OUT : MASK_RECOMPUTE, out,
                           p > 0.0f ? 1.0f / (1.0f - p) : 1.0f, 0};
    backward(din, dgamma, dbeta, dout, in, gamma, beta, mean, invstd, &gi, d);
}
