/* bn.c — batch normalisation, CPU. See bn.h.
 * Public: bn_forward_train, bn_forward_infer, bn_backward.
 *
 * Channel sums run in double: a channel of wrn-16-10 at batch 128 has 100,352 elements, and a
 * float running sum would lose the small differences that the variance and gradients depend on.
 * The variance is computed in two passes (mean first), which is exact enough for any offset.
 *
 * Running variance: like PyTorch, the update takes the unbiased batch variance var·M/(M−1)
 * (M = N·H·W) while normalisation uses the biased one. Keras does the same in effect:
 * standalone Keras 2.x multiplies the batch variance by M/(M − 1 − eps) before the update, and
 * tf.keras's fused kernel (used for 4-D inputs) returns the Bessel-corrected M/(M−1) variance
 * for it; only tf.keras's non-fused path (tf.nn.moments) updates with the biased variance.
 */
#include "bn.h"

#include <math.h>
#include <stddef.h>

#include "layer_math.h"

void bn_forward_train(float *out, const float *in, const float *gamma, const float *beta,
                      float *mean, float *invstd, float *run_mean, float *run_var,
                      const bn_dims *d)
{
    const size_t HW = (size_t)d->hw, CHW = (size_t)d->c * HW;
    const double M = (double)d->n * (double)HW;
    for (int c = 0; c < d->c; c++) {
        double s = 0.0;
        for (int n = 0; n < d->n; n++) {
            const float *x = in + (size_t)n * CHW + (size_t)c * HW;
            for (size_t i = 0; i < HW; i++)
                s += x[i];
        }
        const double mu = s / M;
        double ss = 0.0;
        for (int n = 0; n < d->n; n++) {
            const float *x = in + (size_t)n * CHW + (size_t)c * HW;
            for (size_t i = 0; i < HW; i++) {
                const double t = x[i] - mu;
                ss += t * t;
            }
        }
        const double var = ss / M;
        const float m = (float)mu, is = (float)(1.0 / sqrt(var + d->eps));
        mean[c] = m;
        invstd[c] = is;
        run_mean[c] = lm_running(run_mean[c], m, d->momentum);
        run_var[c] = lm_running(run_var[c], (float)(M > 1.0 ? var * M / (M - 1.0) : var),
                                d->momentum);
        const float g = gamma[c], b = beta[c];
        for (int n = 0; n < d->n; n++) {
            const float *x = in + (size_t)n * CHW + (size_t)c * HW;
            float *y = out + (size_t)n * CHW + (size_t)c * HW;
            for (size_t i = 0; i < HW; i++)
                y[i] = lm_bn_apply(x[i], m, is, g, b);
        }
    }
}

void bn_forward_infer(float *out, const float *in, const float *gamma, const float *beta,
                      const float *run_mean, const float *run_var, const bn_dims *d)
{
    const size_t HW = (size_t)d->hw, CHW = (size_t)d->c * HW;
    for (int c = 0; c < d->c; c++) {
        const float m = run_mean[c], is = 1.0f / sqrtf(run_var[c] + d->eps);
        const float g = gamma[c], b = beta[c];
        for (int n = 0; n < d->n; n++) {
            const float *x = in + (size_t)n * CHW + (size_t)c * HW;
            float *y = out + (size_t)n * CHW + (size_t)c * HW;
            for (size_t i = 0; i < HW; i++)
                y[i] = lm_bn_apply(x[i], m, is, g, b);
        }
    }
}

void bn_backward(float *din, float *dgamma, float *dbeta, const float *dout, const float *in,
                 const float *gamma, const float *mean, const float *invstd, const bn_dims *d)
{
    const size_t HW = (size_t)d->hw, CHW = (size_t)d->c * HW;
    const double M = (double)d->n * (double)HW;
    for (int c = 0; c < d->c; c++) {
        const float m = mean[c], is = invstd[c];
        double sdy = 0.0, sdyx = 0.0; /* Σ dy and Σ dy·xhat over the channel */
        for (int n = 0; n < d->n; n++) {
            const float *x = in + (size_t)n * CHW + (size_t)c * HW;
            const float *dy = dout + (size_t)n * CHW + (size_t)c * HW;
            for (size_t i = 0; i < HW; i++) {
                sdy += dy[i];
                sdyx += (double)dy[i] * ((x[i] - m) * is);
            }
        }
        if (dgamma)
            dgamma[c] += (float)sdyx;
        if (dbeta)
            dbeta[c] += (float)sdy;
        if (!din)
            continue;
        const float mdy = (float)(sdy / M), mdyx = (float)(sdyx / M), g = gamma[c];
        for (int n = 0; n < d->n; n++) {
            const float *x = in + (size_t)n * CHW + (size_t)c * HW;
            const float *dy = dout + (size_t)n * CHW + (size_t)c * HW;
            float *dx = din + (size_t)n * CHW + (size_t)c * HW;
            for (size_t i = 0; i < HW; i++)
                dx[i] += lm_bn_grad(dy[i], x[i], m, is, g, mdy, mdyx);
        }
    }
}
