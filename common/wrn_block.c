/* wrn_block.c — one WideResNet residual block, forward and backward. See wrn_block.h.
 * Public: wrn_block_forward, wrn_block_backward, wrn_conv_forward, wrn_conv_backward,
 *         wrn_bn_forward, wrn_bn_backward.
 *
 * Memory: the block keeps four activations (c1, r1, c2, r2); ReLU and dropout run in place.
 * Dropout in place over the ReLU output is safe for backward: an element that survived keeps
 * its sign, and a dropped one has zero gradient through the dropout anyway, so "output > 0" is
 * still the right ReLU mask.
 */
#include "wrn_block.h"

#include <string.h>

#include "act.h"

void wrn_conv_forward(wrn_conv *c, float *out, const float *in, int B, float *work)
{
    c->d.n = B;
    conv2d_forward(out, in, c->w, c->b, &c->d, work);
}

void wrn_conv_backward(wrn_conv *c, float *din, const float *dout, const float *in, int B,
                       float *work)
{
    c->d.n = B;
    conv2d_backward(din, c->dw, c->db, dout, in, c->w, &c->d, work);
}

void wrn_bn_forward(wrn_bn *bn, float *out, const float *in, int B, int train)
{
    bn->d.n = B;
    if (train)
        bn_forward_train(out, in, bn->gamma, bn->beta, bn->mean, bn->invstd, bn->run_mean,
                         bn->run_var, &bn->d);
    else
        bn_forward_infer(out, in, bn->gamma, bn->beta, bn->run_mean, bn->run_var, &bn->d);
}

void wrn_bn_backward(wrn_bn *bn, float *din, const float *dout, const float *in, int B)
{
    bn->d.n = B;
    bn_backward(din, bn->dgamma, bn->dbeta, dout, in, bn->gamma, bn->mean, bn->invstd, &bn->d);
}

void wrn_block_forward(wrn_block *blk, float *out, const float *in, int B, int train,
                       uint64_t key, float *work)
{
    const size_t n = (size_t)B * blk->cout * blk->h * blk->w;
    wrn_conv_forward(&blk->conv1, blk->c1, in, B, work);
    wrn_bn_forward(&blk->bn1, blk->r1, blk->c1, B, train);
    relu_forward(blk->r1, blk->r1, n);
    dropout_forward(blk->r1, blk->r1, n, blk->dropout, key, train);
    wrn_conv_forward(&blk->conv2, blk->c2, blk->r1, B, work);
    wrn_bn_forward(&blk->bn2, blk->r2, blk->c2, B, train);
    relu_forward(blk->r2, blk->r2, n);
    if (blk->has_short)
        wrn_conv_forward(&blk->shortcut, out, in, B, work);
    else
        memcpy(out, in, n * sizeof *out);
    for (size_t i = 0; i < n; i++)
        out[i] += blk->r2[i];
}

void wrn_block_backward(wrn_block *blk, float *din, const float *dout, const float *in, int B,
                        uint64_t key, float *t1, float *t2, float *work)
{
    const size_t n = (size_t)B * blk->cout * blk->h * blk->w, bytes = n * sizeof(float);
    /* residual branch: relu2 -> bn2 -> conv2 */
    memset(t1, 0, bytes);
    relu_backward(t1, dout, blk->r2, n);
    memset(t2, 0, bytes);
    wrn_bn_backward(&blk->bn2, t2, t1, blk->c2, B);
    memset(t1, 0, bytes);
    wrn_conv_backward(&blk->conv2, t1, t2, blk->r1, B, work); /* t1: ∂/∂(dropout output) */
    float *g = t1, *spare = t2;
    if (blk->dropout > 0.0f) {
        memset(t2, 0, bytes);
        dropout_backward(t2, t1, n, blk->dropout, key);
        g = t2;
        spare = t1;
    }
    memset(spare, 0, bytes);
    relu_backward(spare, g, blk->r1, n); /* spare: ∂/∂(bn1 output) */
    memset(g, 0, bytes);
    wrn_bn_backward(&blk->bn1, g, spare, blk->c1, B); /* g: ∂/∂c1 */
    wrn_conv_backward(&blk->conv1, din, g, in, B, work);
    /* shortcut branch */
    if (blk->has_short) {
        wrn_conv_backward(&blk->shortcut, din, dout, in, B, work);
    } else {
        for (size_t i = 0; i < n; i++)
            din[i] += dout[i];
    }
}
