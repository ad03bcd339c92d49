/* bn.h — batch normalisation over (N, H, W) per channel, NCHW float32.
 *
 * Training: normalise with the batch mean and (biased) variance, keep mean and 1/sqrt(var+eps)
 * for backward, update the running statistics in the Keras convention
 *   running = momentum·running + (1 − momentum)·batch   (momentum 0.9: 0.1 of the batch),
 * the running variance taking the unbiased batch variance (see bn.c).
 * Inference: normalise with the running statistics.
 *
 * Public: bn_forward_train, bn_forward_infer, bn_backward.
 */
#ifndef HVDLAB_BN_H
#define HVDLAB_BN_H

#define BN_EPS 1e-5f
#define BN_MOMENTUM 0.9f

typedef struct {
    int n, c, hw;   /* input (N, C, H·W) */
    float eps;      /* BN_EPS in the model */
    float momentum; /* Keras convention, BN_MOMENTUM in the model */
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

#endif
