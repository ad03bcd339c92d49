/* layer_math.h — elementwise math of the layers, shared by the CPU code and a future CUDA path.
 *
 * Everything here is a HVD_HOST_DEVICE static inline helper on scalars, so a CUDA kernel can call
 * the very same code as the CPU loops and the CPU unit tests cover the GPU math too.
 *
 *   lm_mix64, lm_splitmix64      splitmix64 finaliser and generator (seeded, never rand())
 *   lm_uniform01, lm_bits24      counter-based uniform in [0, 1) from (key, index), its 24 bits
 *   lm_dropout_threshold         p as a threshold on those bits
 *   lm_dropout_scale             inverted-dropout multiplier of element i: 0 or 1/(1-p)
 *   lm_relu, lm_relu_grad        ReLU and its gradient given the ReLU's output
 *   lm_bn_apply                  gamma·(x-mean)·invstd + beta
 *   lm_bn_grad                   dx of batch norm from per-channel sums (see bn.c)
 *   lm_running                   Keras-convention running average m·running + (1-m)·batch
 *   lm_softmax_row               one row's softmax probabilities and log-sum-exp
 */
#ifndef HVDLAB_LAYER_MATH_H
#define HVDLAB_LAYER_MATH_H

#include <math.h>
#include <stdint.h>

#include "base/half.h" /* HVD_HOST_DEVICE */

static inline HVD_HOST_DEVICE uint64_t lm_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline HVD_HOST_DEVICE uint64_t lm_splitmix64(uint64_t *state)
{
    *state += 0x9e3779b97f4a7c15ull;
    return lm_mix64(*state);
}

/* Uniform in [0, 1) with 24 random bits, a pure function of (key, i): any thread can draw
 * element i without a shared generator state (what a GPU kernel needs). */
static inline HVD_HOST_DEVICE uint32_t lm_bits24(uint64_t key, uint64_t i)
{
    return (uint32_t)(lm_mix64(key ^ lm_mix64(i + 0x9e3779b97f4a7c15ull)) >> 40);
}

static inline HVD_HOST_DEVICE float lm_uniform01(uint64_t key, uint64_t i)
{
    return (float)lm_bits24(key, i) * 0x1.0p-24f;
}

/* lm_uniform01(key, i) < p exactly when lm_bits24(key, i) < lm_dropout_threshold(p): p·2^24 is
 * exact in float and the bits are an integer. Integer compares vectorise (bn.c's fused dropout). */
static inline HVD_HOST_DEVICE uint32_t lm_dropout_threshold(float p)
{
    return (uint32_t)ceilf(p * 16777216.0f);
}

/* Inverted dropout: element i is dropped with probability p and otherwise scaled by 1/(1-p),
 * so the expected activation is unchanged and inference needs no rescaling. */
static inline HVD_HOST_DEVICE float lm_dropout_scale(uint64_t key, uint64_t i, float p)
{
    return lm_uniform01(key, i) < p ? 0.0f : 1.0f / (1.0f - p);
}

static inline HVD_HOST_DEVICE float lm_relu(float x) { return x > 0.0f ? x : 0.0f; }

/* Gradient through a ReLU from its output y (y > 0 exactly where the input was > 0). */
static inline HVD_HOST_DEVICE float lm_relu_grad(float dy, float y) { return y > 0.0f ? dy : 0.0f; }

static inline HVD_HOST_DEVICE float lm_bn_apply(float x, float mean, float invstd, float gamma,
                                                float beta)
{
    return gamma * ((x - mean) * invstd) + beta;
}

/* Batch-norm input gradient of one element: with xhat = (x-mean)·invstd, M elements per channel,
 * dx = gamma·invstd·(dy − mean(dy) − xhat·mean(dy·xhat)). mean_dy and mean_dy_xhat are the
 * channel's means over its M elements. */
static inline HVD_HOST_DEVICE float lm_bn_grad(float dy, float x, float mean, float invstd,
                                               float gamma, float mean_dy, float mean_dy_xhat)
{
    float xhat = (x - mean) * invstd;
    return gamma * invstd * (dy - mean_dy - xhat * mean_dy_xhat);
}

/* Keras BatchNormalization(momentum=m): running = m·running + (1−m)·batch. */
static inline HVD_HOST_DEVICE float lm_running(float running, float batch, float momentum)
{
    return momentum * running + (1.0f - momentum) * batch;
}

/* Softmax of one row of k logits into p; returns its log-sum-exp (the row's loss is lse − z[y]).
 * The maximum in float, the sums, exp and log in double: every row the same operations on CPU
 * and GPU, so both give the same probabilities. */
static inline HVD_HOST_DEVICE double lm_softmax_row(float *p, const float *z, int k)
{
    float m = z[0];
    for (int j = 1; j < k; j++)
        if (z[j] > m)
            m = z[j];
    double s = 0.0;
    for (int j = 0; j < k; j++)
        s += exp((double)z[j] - m);
    const double lse = m + log(s);
    for (int j = 0; j < k; j++)
        p[j] = (float)exp((double)z[j] - lse);
    return lse;
}

#endif
