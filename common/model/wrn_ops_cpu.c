/* wrn_ops_cpu.c — the CPU's layer tables (wrn_ops.h): NCHW reference layers, and the nChw16c
 * layers of a blocked model (nn/blocked16.h). The convolutions are the same calls in both: the
 * dims' blocked flag already says the layout to nn/conv2d.c.
 * Public (to model/): WRN_OPS_CPU, WRN_OPS_CPU_BLOCKED.
 */
#include "base/threads.h"
#include "model/wrn_block.h"
#include "model/wrn_ops.h"
#include "nn/blocked16.h"
#include "nn/xent.h"

static void conv_forward(wrn_conv *c, float *out, const float *in, float *work)
{
    conv2d_forward(out, in, c->w, c->b, &c->d, work);
}

static void conv_backward(wrn_conv *c, float *din, const float *dout, const float *in,
                          float *work)
{
    conv2d_backward(din, c->dw, c->db, dout, in, c->w, &c->d, work);
}

static void conv_backward_set(wrn_conv *c, float *din, const float *dout, const float *in,
                              float *work)
{
    conv2d_backward_set(din, c->dw, c->db, dout, in, c->w, &c->d, work);
}

static void bn_fwd(wrn_bn *bn, float *out, const float *in, int train)
{
    if (train)
        bn_forward_train(out, in, bn->gamma, bn->beta, bn->mean, bn->invstd, bn->run_mean,
                         bn->run_var, &bn->d);
    else
        bn_forward_infer(out, in, bn->gamma, bn->beta, bn->run_mean, bn->run_var, &bn->d);
}

static void bn_bwd(wrn_bn *bn, float *din, const float *dout, const float *in)
{
    bn_backward(din, bn->dgamma, bn->dbeta, dout, in, bn->gamma, bn->mean, bn->invstd, &bn->d);
}

static void bn_relu_fwd(wrn_bn *bn, float *out, const float *in, const float *add, int train,
                        float p, uint64_t key)
{
    if (train)
        bn_relu_forward_train(out, in, add, p, key, bn->gamma, bn->beta, bn->mean, bn->invstd,
                              bn->run_mean, bn->run_var, &bn->d);
    else
        bn_relu_forward_infer(out, in, add, bn->gamma, bn->beta, bn->run_mean, bn->run_var,
                              &bn->d);
}

static void bn_relu_bwd(wrn_bn *bn, float *din, const float *dout, const float *in,
                        const float *relu_out, float p)
{
    bn_relu_backward(din, bn->dgamma, bn->dbeta, dout, in, relu_out, p, bn->gamma, bn->beta,
                     bn->mean, bn->invstd, &bn->d);
}

static void bn_relu_fwd_c16(wrn_bn *bn, float *out, const float *in, const float *add, int train,
                            float p, uint64_t key)
{
    if (train)
        bn_relu_forward_train_c16(out, in, add, p, key, bn->gamma, bn->beta, bn->mean,
                                  bn->invstd, bn->run_mean, bn->run_var, &bn->d);
    else
        bn_relu_forward_infer_c16(out, in, add, bn->gamma, bn->beta, bn->run_mean, bn->run_var,
                                  &bn->d);
}

static void bn_relu_bwd_c16(wrn_bn *bn, float *din, const float *dout, const float *in,
                            const float *relu_out, float p)
{
    bn_relu_backward_c16(din, bn->dgamma, bn->dbeta, dout, in, relu_out, p, bn->gamma, bn->beta,
                         bn->mean, bn->invstd, &bn->d);
}

static void add(float *din, const float *dout, size_t n)
{
#pragma omp parallel for simd schedule(static) num_threads(compute_threads())
    for (size_t i = 0; i < n; i++)
        din[i] += dout[i];
}

static void batch_in(struct wrn_input *in, const float **x, const int **y, size_t B)
{
    (void)in, (void)x, (void)y, (void)B; /* the layers read the host's batch */
}

const wrn_ops WRN_OPS_CPU = {
    .name = "cpu",
    .conv_forward = conv_forward,
    .conv_backward = conv_backward,
    .conv_backward_set = conv_backward_set,
    .bn_forward = bn_fwd,
    .bn_backward = bn_bwd,
    .bn_relu_forward = bn_relu_fwd,
    .bn_relu_backward = bn_relu_bwd,
    .maxpool_forward = maxpool2_forward,
    .maxpool_backward = maxpool2_backward,
    .gap_forward = gap_forward,
    .gap_backward = gap_backward,
    .dense_forward = dense_forward,
    .dense_backward = dense_backward,
    .xent_forward = xent_forward,
    .xent_backward = xent_backward,
    .xent_correct = xent_correct,
    .zero = compute_zero,
    .add = add,
    .batch_in = batch_in,
};

/* The dense layer, the loss and GAP's (N, C) output have no layout; the plain batch norm is
 * NCHW only (wrn_block.c refuses a blocked one before the call). */
const wrn_ops WRN_OPS_CPU_BLOCKED = {
    .name = "cpu nChw16c",
    .conv_forward = conv_forward,
    .conv_backward = conv_backward,
    .conv_backward_set = conv_backward_set,
    .bn_forward = bn_fwd,
    .bn_backward = bn_bwd,
    .bn_relu_forward = bn_relu_fwd_c16,
    .bn_relu_backward = bn_relu_bwd_c16,
    .maxpool_forward = maxpool2_forward_c16,
    .maxpool_backward = maxpool2_backward_c16,
    .gap_forward = gap_forward_c16,
    .gap_backward = gap_backward_c16,
    .dense_forward = dense_forward,
    .dense_backward = dense_backward,
    .xent_forward = xent_forward,
    .xent_backward = xent_backward,
    .xent_correct = xent_correct,
    .zero = compute_zero,
    .add = add,
    .batch_in = batch_in,
};
