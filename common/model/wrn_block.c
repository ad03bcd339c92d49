/* wrn_block.c — one WideResNet residual block, forward and backward. See wrn_block.h.
 * Public: wrn_block_forward, wrn_block_backward, wrn_conv_forward, wrn_conv_backward,
 *         wrn_conv_backward_set, wrn_bn_forward, wrn_bn_backward, wrn_bn_relu_forward,
 *         wrn_bn_relu_backward.
 *
 * Memory: the block keeps three activations for backward (c1, r1, c2). Batch norm runs fused
 * with what follows it (bn.h): bn1 + ReLU + dropout writes r1 in one pass, bn2 + ReLU + the
 * shortcut add writes the block output in one pass (relu(bn2) is never stored: its mask is
 * recomputed from c2 in backward). Dropout's mask need not be regenerated in backward: an
 * element of r1 is > 0 exactly where it passed both the ReLU and the dropout.
 *
 * Per-layer times go to layer_prof.h when it is on (bench/train_speed --profile); on a GPU
 * they time the enqueueing, not the kernels.
 *
 * Where a layer runs: each calls its implementation once, through the table its struct holds
 * (ops, wrn_ops.h: the CPU's NCHW or nChw16c layers, or the CUDA/cuDNN twins), chosen when the
 * model was built (wrn_place_mark); nothing here asks where it runs.
 *
 * Bias folding (a GPU model, unless HVDLAB_BIAS_IN_BN=0; wrn_place.c): a convolution followed by a
 * fused batch norm leaves its bias out of its output and of its backward, and the batch norm adds
 * the bias to every element it reads and returns its gradient (nn/bn.h, bn_relu_*_pre_cuda), so
 * neither the bias add nor the bias gradient takes a pass over the tensor of its own. c1 and c2
 * are then the convolutions' outputs without the bias (wrn_ops_cuda.c).
 */
#include "model/wrn_block.h"

#include "base/fatal.h"
#include "nn/layer_prof.h"

static void conv_prof(double t0, const wrn_conv *c, const char *dir)
{
    if (lprof_on())
        lprof_stopf(t0, "conv%dx%d %d>%d %dx%d %s", c->d.k, c->d.k, c->d.cin, c->d.cout, c->d.h,
                    c->d.w, dir);
}

void wrn_conv_forward(wrn_conv *c, float *out, const float *in, int B, float *work)
{
    const double t0 = lprof_start();
    c->d.n = B;
    c->ops->conv_forward(c, out, in, work);
    conv_prof(t0, c, "fwd");
}

void wrn_conv_backward(wrn_conv *c, float *din, const float *dout, const float *in, int B,
                       float *work)
{
    const double t0 = lprof_start();
    c->d.n = B;
    c->ops->conv_backward(c, din, dout, in, work);
    conv_prof(t0, c, "bwd");
}

void wrn_conv_backward_set(wrn_conv *c, float *din, const float *dout, const float *in, int B,
                           float *work)
{
    const double t0 = lprof_start();
    c->d.n = B;
    c->ops->conv_backward_set(c, din, dout, in, work);
    conv_prof(t0, c, "bwd");
}

static void nchw_only(const wrn_bn *bn, const char *fn)
{
    if (bn->blocked)
        fatal_error("%s: a blocked (nChw16c) batch norm has only the fused bn+ReLU forms", fn);
    if (bn->pre)
        fatal_error("%s: a batch norm with its convolution's bias folded in has only the fused "
                    "bn+ReLU forms", fn);
}

void wrn_bn_forward(wrn_bn *bn, float *out, const float *in, int B, int train)
{
    nchw_only(bn, "wrn_bn_forward");
    bn->d.n = B;
    bn->ops->bn_forward(bn, out, in, train);
}

void wrn_bn_backward(wrn_bn *bn, float *din, const float *dout, const float *in, int B)
{
    nchw_only(bn, "wrn_bn_backward");
    bn->d.n = B;
    bn->ops->bn_backward(bn, din, dout, in);
}

/* Fused batch norm + ReLU (+ dropout) (+ add) of a block or the stem, training or inference. */
void wrn_bn_relu_forward(wrn_bn *bn, float *out, const float *in, const float *add, int B,
                         int train, float p, uint64_t key)
{
    const double t0 = lprof_start();
    bn->d.n = B;
    if (train)
        bn->ops->bn_relu_forward(bn, out, in, add, 1, p, key);
    else
        bn->ops->bn_relu_forward(bn, out, in, add, 0, 0.0f, 0);
    lprof_stop(t0, add ? "bn+relu+add fwd" : p > 0.0f ? "bn+relu+dropout fwd" : "bn+relu fwd");
}

void wrn_block_forward(wrn_block *blk, float *out, const float *in, int B, int train,
                       uint64_t key, float *work)
{
    wrn_conv_forward(&blk->conv1, blk->c1, in, B, work);
    wrn_bn_relu_forward(&blk->bn1, blk->r1, blk->c1, NULL, B, train,
                        train ? blk->dropout : 0.0f, key);
    wrn_conv_forward(&blk->conv2, blk->c2, blk->r1, B, work);
    const float *shortcut = in;
    if (blk->has_short) {
        wrn_conv_forward(&blk->shortcut, out, in, B, work);
        shortcut = out;
    }
    wrn_bn_relu_forward(&blk->bn2, out, blk->c2, shortcut, B, train, 0.0f,
                        0); /* out = relu(bn2) + shortcut */
}

/* Backward of bn_relu: din = ∂L/∂(bn input). relu_out: the fused output when it had no add
 * (its mask), or NULL to recompute the ReLU mask. */
void wrn_bn_relu_backward(wrn_bn *bn, float *din, const float *dout, const float *in,
                          const float *relu_out, float p, int B)
{
    const double t0 = lprof_start();
    bn->d.n = B;
    bn->ops->bn_relu_backward(bn, din, dout, in, relu_out, p);
    lprof_stop(t0, "bn+relu bwd");
}

void wrn_block_backward(wrn_block *blk, float *din, const float *dout, const float *in, int B,
                        uint64_t key, float *t1, float *t2, float *work)
{
    (void)key; /* the dropout mask is read off r1 (see the top of this file) */
    const size_t n = (size_t)B * blk->cout * blk->h * blk->w;
    /* residual branch: (relu2 -> bn2) -> conv2 -> (dropout -> relu1 -> bn1) -> conv1 */
    wrn_bn_relu_backward(&blk->bn2, t1, dout, blk->c2, NULL, 0.0f, B); /* t1: ∂/∂c2 */
    wrn_conv_backward_set(&blk->conv2, t2, t1, blk->r1, B, work);      /* t2: ∂/∂r1 */
    wrn_bn_relu_backward(&blk->bn1, t1, t2, blk->c1, blk->r1, blk->dropout, B); /* t1: ∂/∂c1 */
    wrn_conv_backward_set(&blk->conv1, din, t1, in, B, work);          /* din =, then += */
    /* shortcut branch */
    if (blk->has_short)
        wrn_conv_backward(&blk->shortcut, din, dout, in, B, work);
    else
        LPROF("shortcut add bwd", blk->ops->add(din, dout, n));
}
