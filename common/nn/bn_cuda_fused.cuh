/* bn_cuda_fused.cuh — what the GPU batch norm's two layouts share: what a fused call does
 * after normalising (bn_post: ReLU, dropout, the add; and the folded bias before), how backward
 * forms dy through the fused mask, how a channel's statistics are stored, and the NHWC layout's
 * entry points. Included by bn_cuda.cu (NCHW, and the public functions of bn.h) and
 * bn_nhwc_cuda.cu (NHWC: the tensor as (N·H·W, C), channel fastest). Internal to nn/.
 */
#ifndef HVDLAB_BN_CUDA_FUSED_CUH
#define HVDLAB_BN_CUDA_FUSED_CUH

#include <stdint.h>

#include "nn/layer_math.h"

extern "C" {
#include "nn/bn.h"
}

/* What follows batch norm in a fused call (bn.c's bn_post), and on the GPU what may come before:
 * the bias of the convolution whose output in is, added to in first where the model folds it in
 * (bn_relu_*_pre_cuda; not on the CPU). */
typedef struct {
    int relu;
    float p;          /* dropout rate, 0: none */
    uint64_t key;     /* dropout key (act.h) */
    const float *add; /* added last, or NULL */
    const float *pre; /* (C) added to in first, or NULL */
} bn_post;

/* bn, then ReLU, the dropout mask of element idx and the add a (post.add's element), in that
 * order. */
static __device__ __forceinline__ float apply_post(float x, float a, size_t idx, float m, float is,
                                                   float g, float b, const bn_post &post,
                                                   float keep, uint32_t drop)
{
    const float y = lm_bn_apply(x, m, is, g, b);
    if (!post.relu)
        return y;
    float v = lm_relu(y);
    if (post.p > 0.0f) /* drop = lm_uniform01 < p, as integers (bn.c) */
        v = v * (lm_bits24(post.key, idx) < drop ? 0.0f : keep);
    return post.add ? v + a : v;
}

/* Channel c's 1/sqrt(var + eps) for backward and its running statistics, from the batch mean
 * and the biased variance over Md elements (one thread of the channel's blocks calls it). */
static __device__ __forceinline__ void store_stats(int c, float mf, float is, double var,
                                                   double Md, float *invstd, float *run_mean,
                                                   float *run_var, float momentum)
{
    invstd[c] = is;
    run_mean[c] = lm_running(run_mean[c], mf, momentum);
    run_var[c] = lm_running(run_var[c], (float)(Md > 1.0 ? var * Md / (Md - 1.0) : var), momentum);
}

/* How dy is formed from dout (bn.c): as is, through the fused ReLU/dropout mask read off the
 * fused output, or through the ReLU mask recomputed from in. */
enum { MASK_NONE, MASK_FROM_OUT, MASK_RECOMPUTE };

template <int MODE>
static __device__ __forceinline__ float masked_dy(float dy, float x, float o, float keep, float m,
                                                  float is, float g, float b)
{
    if (MODE == MASK_FROM_OUT)
        return dy * (o > 0.0f ? keep : 0.0f);
    if (MODE == MASK_RECOMPUTE)
        return lm_relu_grad(dy, lm_bn_apply(x, m, is, g, b));
    return dy;
}

/* What backward reads, for the kernels (device pointers), and where the folded bias's gradient
 * goes. */
struct bn_grad_in {
    const float *dout, *in, *outp; /* outp: the fused output (MASK_FROM_OUT), else NULL */
    const float *gamma, *beta, *mean, *invstd;
    const float *pre; /* bn_post.pre of the forward, or NULL */
    float *dpre;      /* with pre: += Σ din over each channel (the bias's gradient), else NULL */
    float keep;       /* 1/(1 − p) of the dropout, 1 without */
};

/* The NHWC layout (d->nhwc; bn_nhwc_cuda.cu): the same conventions and arguments as the NCHW
 * calls of bn_cuda.cu; the dropout mask of an element is still that of its flat NCHW index.
 * backward: MODE as above; accumulate: din += (else =); din NULL: only dgamma, dbeta. */
void bn_nhwc_forward_train(float *out, const float *in, const float *gamma, const float *beta,
                           float *mean, float *invstd, float *run_mean, float *run_var,
                           const bn_post &post, const bn_dims *d);
void bn_nhwc_forward_infer(float *out, const float *in, const float *gamma, const float *beta,
                           const float *run_mean, const float *run_var, const bn_post &post,
                           const bn_dims *d);
void bn_nhwc_backward(int mode, bool accumulate, float *din, float *dgamma, float *dbeta,
                      const bn_grad_in &gi, const bn_dims *d);

#endif
