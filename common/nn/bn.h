/* bn.h — batch normalisation over (N, H, W) per channel, NCHW float32.
 *
 * Training: normalise with the batch mean and (biased) variance, keep mean and 1/sqrt(var+eps)
 * for backward, update the running statistics in the Keras convention
 *   running = momentum·running + (1 − momentum)·batch   (momentum 0.9: 0.1 of the batch),
 * the running variance taking the unbiased batch variance (see bn.c).
 * Inference: normalise with the running statistics.
 *
 * Fused forms for the WRN block (one read and one write of the tensor instead of three or four):
 * bn_relu_forward_train/infer compute relu(bn(in)), then dropout (act.h's mask, training only),
 * then + add; bn_relu_backward is their backward.
 *
 * Work is split by channel over compute_threads() threads (threads.h); results do not depend on
 * the thread count.
 *
 * Public: bn_forward_train, bn_forward_infer, bn_backward, bn_relu_forward_train,
 *         bn_relu_forward_infer, bn_relu_backward; with HVDLAB_CUDA the same names + _cuda.
 */
#ifndef HVDLAB_BN_H
#define HVDLAB_BN_H

#include <stdint.h>

#define BN_EPS 1e-5f
#define BN_MOMENTUM 0.9f

typedef struct {
    int n, c, hw;   /* input (N, C, H·W) */
    float eps;      /* BN_EPS in the model */
    float momentum; /* Keras convention, BN_MOMENTUM in the model */
    int nhwc;       /* CUDA twins only: 1 when the tensors are (N, H·W, C), channel fastest (a
                     * GPU model with HVDLAB_ACTIVATION_LAYOUT=nhwc); 0: (N, C, H·W). The CPU
                     * functions take NCHW only */
} bn_dims;

/* out may equal in. mean and invstd (C) are written (saved for backward); run_mean and run_var
 * (C) are updated in place. */
void bn_forward_train(float *out /* (N,C,HW) */, const float *in /* (N,C,HW) */,
                      const float *gamma /* (C) */, const float *beta /* (C) */,
                      float *mean /* (C) out */, float *invstd /* (C) out */,
                      float *run_mean /* (C) in/out */, float *run_var /* (C) in/out */,
                      const bn_dims *d);

/* out may equal in. */
void bn_forward_infer(float *out /* (N,C,HW) */, const float *in /* (N,C,HW) */,
                      const float *gamma /* (C) */, const float *beta /* (C) */,
                      const float *run_mean /* (C) */, const float *run_var /* (C) */,
                      const bn_dims *d);

/* Backward of bn_forward_train: din, dgamma, dbeta += (any may be NULL). din must not alias dout. */
void bn_backward(float *din /* (N,C,HW) += */, float *dgamma /* (C) += */,
                 float *dbeta /* (C) += */, const float *dout /* (N,C,HW) */,
                 const float *in /* (N,C,HW) */, const float *gamma /* (C) */,
                 const float *mean /* (C) */, const float *invstd /* (C) */, const bn_dims *d);

/* out = relu(bn(in)), · the dropout mask of (key, flat NCHW index) when p > 0 (dropout_forward,
 * act.h), + add when add is not NULL; the same values as bn_forward_train, relu_forward,
 * dropout_forward and the add in sequence. out may equal in or add. Statistics as
 * bn_forward_train. */
void bn_relu_forward_train(float *out /* (N,C,HW) */, const float *in /* (N,C,HW) */,
                           const float *add /* (N,C,HW) or NULL */, float p, uint64_t key,
                           const float *gamma /* (C) */, const float *beta /* (C) */,
                           float *mean /* (C) out */, float *invstd /* (C) out */,
                           float *run_mean /* (C) in/out */, float *run_var /* (C) in/out */,
                           const bn_dims *d);

/* Inference: out = relu(bn(in)) (+ add), running statistics, no dropout. */
void bn_relu_forward_infer(float *out /* (N,C,HW) */, const float *in /* (N,C,HW) */,
                           const float *add /* (N,C,HW) or NULL */, const float *gamma,
                           const float *beta, const float *run_mean, const float *run_var,
                           const bn_dims *d);

/* Backward of bn_relu_forward_train: din = ∂L/∂in (overwritten, not +=; must not alias dout),
 * dgamma, dbeta += (any may be NULL). The ReLU/dropout mask comes from the fused output `out`
 * (> 0 where an element passed both; its gradient is scaled by 1/(1−p)) when that output had no
 * add; otherwise pass out = NULL and p = 0, and the ReLU mask is recomputed from in. */
void bn_relu_backward(float *din /* (N,C,HW) = */, float *dgamma /* (C) += */,
                      float *dbeta /* (C) += */, const float *dout /* (N,C,HW) */,
                      const float *in /* (N,C,HW) */, const float *out /* (N,C,HW) or NULL */,
                      float p, const float *gamma /* (C) */, const float *beta /* (C) */,
                      const float *mean /* (C) */, const float *invstd /* (C) */,
                      const bn_dims *d);

#ifdef HVDLAB_CUDA
/* CUDA twins (bn_cuda.cu): the same arguments as device pointers (d stays on the host), the
 * stream of nn/gpu_context.h, the same conventions (running update, variance correction, eps,
 * fused ReLU/dropout/add, = or += outputs). A channel's sums are taken in double in a fixed
 * order, so results do not depend on timing; they match the CPU to rounding. With d->nhwc the
 * tensors are NHWC (bn_nhwc_cuda.cu; the two switches below are the NCHW kernels' and do not
 * apply). Training forward and backward split a large channel over several blocks
 * (bn_cuda.cu), or run one block per channel with HVDLAB_BN_SPLIT=0 in the environment or
 * bn_cuda_set_split(0). With
 * HVDLAB_BN_BATCH=1 (or bn_cuda_set_batch(1); off by default until a GPU has timed it) a thread
 * issues the loads of several of its elements before it uses any; the same sums in the same
 * order, so the same results. Each environment variable is read at the first call, and again at
 * the next call after its setter's -1. */
void bn_cuda_set_split(int on);
void bn_cuda_set_batch(int on);
void bn_forward_train_cuda(float *out, const float *in, const float *gamma, const float *beta,
                           float *mean, float *invstd, float *run_mean, float *run_var,
                           const bn_dims *d);
void bn_forward_infer_cuda(float *out, const float *in, const float *gamma, const float *beta,
                           const float *run_mean, const float *run_var, const bn_dims *d);
void bn_backward_cuda(float *din, float *dgamma, float *dbeta, const float *dout,
                      const float *in, const float *gamma, const float *mean,
                      const float *invstd, const bn_dims *d);
void bn_relu_forward_train_cuda(float *out, const float *in, const float *add, float p,
                                uint64_t key, const float *gamma, const float *beta, float *mean,
                                float *invstd, float *run_mean, float *run_var, const bn_dims *d);
void bn_relu_forward_infer_cuda(float *out, const float *in, const float *add,
                                const float *gamma, const float *beta, const float *run_mean,
                                const float *run_var, const bn_dims *d);
void bn_relu_backward_cuda(float *din, float *dgamma, float *dbeta, const float *dout,
                           const float *in, const float *out, float p, const float *gamma,
                           const float *beta, const float *mean, const float *invstd,
                           const bn_dims *d);

/* A GPU model folds the bias of the convolution before a fused batch norm into it (unless
 * HVDLAB_BIAS_IN_BN=0, model/wrn_place.c): the convolution then writes its output without the
 * bias, and these forms normalise in + pre (pre: (C), that bias; the float sum cuDNN's bias add
 * would have stored), where the others normalise in; the backward also adds the bias's gradient,
 * Σ din over each channel, into dpre (+=). With pre NULL they are the plain fused forms (dpre
 * unused). The CPU has no such forms: its convolutions add their own bias. */
void bn_relu_forward_train_pre_cuda(float *out, const float *in, const float *pre,
                                    const float *add, float p, uint64_t key, const float *gamma,
                                    const float *beta, float *mean, float *invstd,
                                    float *run_mean, float *run_var, const bn_dims *d);
void bn_relu_forward_infer_pre_cuda(float *out, const float *in, const float *pre,
                                    const float *add, const float *gamma, const float *beta,
                                    const float *run_mean, const float *run_var,
                                    const bn_dims *d);
void bn_relu_backward_pre_cuda(float *din, float *dpre /* (C) += */, float *dgamma, float *dbeta,
                               const float *dout, const float *in, const float *pre,
                               const float *out, float p, const float *gamma, const float *beta,
                               const float *mean, const float *invstd, const bn_dims *d);
/* acc (C) += each channel's sum over the d->n · d->hw rows of x, an NHWC tensor (d->nhwc; eps
 * and momentum unused), with batch norm's NHWC sums (bn_nhwc_cuda.cu: double, a fixed order).
 * An NHWC convolution's bias gradient (nn/conv2d_cudnn.cu), where cuDNN's backward bias was the
 * slow part of the bias's cost on an H200. */
void bn_nhwc_channel_sums_cuda(float *acc, const float *x, const bn_dims *d);
#endif

#endif
