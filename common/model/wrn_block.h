/* wrn_block.h — the layers of a WideResNet as wrn.c wires them: a convolution or batch norm with
 * pointers into the flat parameter/gradient/state buffers, and one residual block.
 *
 * Block (keras-contrib post-activation form), input (B, Cin, H, W), output (B, Cout, H, W):
 *   out = shortcut(in) + relu(bn2(conv2(dropout(relu(bn1(conv1(in)))))))
 * shortcut = 1x1 conv when Cin != Cout, identity otherwise.
 * Internal to the model (wrn.c builds blocks); public so that the tests can check one block.
 * Activation layout: NCHW, or on a blocked CPU model (wrn_activation_layout, wrn.h) every
 * activation in nChw16c: the convs' d.blocked and the batch norms' blocked are then set, and the
 * same calls run the nChw16c kernels (nn/blocked16.h); the shortcut add is layout-free.
 * Each layer calls its implementation through its ops table (wrn_ops.h), set when the model is
 * built; a test that wires a block by hand sets them (WRN_OPS_CPU).
 *
 * Public: wrn_block_forward, wrn_block_backward (and the single layers at the end).
 */
#ifndef HVDLAB_WRN_BLOCK_H
#define HVDLAB_WRN_BLOCK_H

#include <stdint.h>

#include "model/wrn_ops.h"
#include "nn/bn.h"
#include "nn/conv2d.h"

struct wrn_conv {
    conv2d_dims d;      /* d.n is set per call */
    float *w, *b;       /* (Cout,Cin,k,k), (Cout) in the params buffer */
    float *dw, *db;     /* same shapes in the grads buffer */
    const wrn_ops *ops; /* where it runs (wrn_ops.h): on WRN_OPS_GPU every pointer is device
                           memory */
    int bias_in_bn;     /* GPU, unless HVDLAB_BIAS_IN_BN=0: its output leaves out b and its backward
                           db; the batch norm after it adds both (wrn_bn.pre, wrn_bn.dpre) */
    size_t work_floats; /* GPU: floats in the model's workspace (the work argument) */
};

struct wrn_bn {
    bn_dims d;                  /* d.n is set per call */
    float *gamma, *beta;        /* (C) params */
    float *dgamma, *dbeta;      /* (C) grads */
    float *run_mean, *run_var;  /* (C) non-trainable state */
    float *mean, *invstd;       /* (C) batch statistics saved by the training forward */
    const wrn_ops *ops;         /* where it runs, as the convolutions' */
    int blocked;                /* 1: its tensors are nChw16c (nn/blocked16.h; CPU only) */
    const float *pre;           /* NULL, or the bias of the conv before it, folded in: the fused
                                   forms normalise in + pre (bn.h, bn_relu_*_pre_cuda) */
    float *dpre;                /* with pre: that bias's gradient (+=) */
};

typedef struct {
    int cin, cout, h, w;
    int has_short;          /* 1: 1x1 conv shortcut (cin != cout) */
    const wrn_ops *ops;     /* its identity shortcut's add (its layers have their own) */
    float dropout;          /* rate p, 0 <= p < 1 */
    wrn_conv conv1, conv2, shortcut;
    wrn_bn bn1, bn2;
    /* Activations kept for backward, each (B, Cout, H, W) for B up to the model's max batch: */
    float *c1; /* conv1 output (bn1 input) */
    float *r1; /* relu(bn1) then dropout, in place (conv2 input) */
    float *c2; /* conv2 output (bn2 input); relu(bn2) is fused into the output (wrn_block.c) */
} wrn_block;

/* out = block(in). train: batch statistics (running stats updated) and dropout with key;
 * otherwise running statistics, no dropout. work: max conv2d_work_floats of the block's convs. */
void wrn_block_forward(wrn_block *blk, float *out /* (B,Cout,H,W) */,
                       const float *in /* (B,Cin,H,W) */, int B, int train, uint64_t key,
                       float *work);

/* After a training forward with the same in, B and key: din = ∂/∂in (overwritten: the convs
 * write it without a zeroing pass), parameter gradients +=. t1, t2: scratch of B·Cout·H·W
 * floats each; din, dout, t1, t2 must not overlap. */
void wrn_block_backward(wrn_block *blk, float *din /* (B,Cin,H,W) = */,
                        const float *dout /* (B,Cout,H,W) */, const float *in /* (B,Cin,H,W) */,
                        int B, uint64_t key, float *t1, float *t2, float *work);

/* Single layers in the same wiring, used by the block and the stem. */
void wrn_conv_forward(wrn_conv *c, float *out, const float *in, int B, float *work);
void wrn_conv_backward(wrn_conv *c, float *din, const float *dout, const float *in, int B,
                       float *work);
/* din = ∂/∂in (overwritten), dw and db +=. */
void wrn_conv_backward_set(wrn_conv *c, float *din, const float *dout, const float *in, int B,
                           float *work);
/* Plain batch norm (no ReLU): NCHW batch norms only. */
void wrn_bn_forward(wrn_bn *bn, float *out, const float *in, int B, int train);
void wrn_bn_backward(wrn_bn *bn, float *din, const float *dout, const float *in, int B);
/* Fused bn + ReLU (+ dropout p with key when training) (+ add, or NULL), in either layout. */
void wrn_bn_relu_forward(wrn_bn *bn, float *out, const float *in, const float *add, int B,
                         int train, float p, uint64_t key);
/* Backward of the fused bn + ReLU (+ dropout p) whose output was relu_out (NULL: recompute the
 * ReLU mask, p = 0): din = ∂/∂in, overwritten. */
void wrn_bn_relu_backward(wrn_bn *bn, float *din, const float *dout, const float *in,
                          const float *relu_out, float p, int B);

#endif
