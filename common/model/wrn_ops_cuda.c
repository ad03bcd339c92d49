/* wrn_ops_cuda.c — the GPU's layer table (wrn_ops.h): the CUDA and cuDNN twins of nn/, on the
 * stream of nn/gpu_context.h, with every pointer in device memory. Only in a CUDA build.
 *
 * Bias folding (wrn_block.c): a convolution with bias_in_bn leaves its bias out of its output and
 * of its backward; the batch norm after it (bn->pre, bn->dpre) adds both. With pre NULL the _pre
 * forms are the plain fused forms.
 * Public (to model/): WRN_OPS_CUDA.
 */
#include "model/wrn_ops.h"

#ifdef HVDLAB_CUDA

#include "model/wrn_block.h"
#include "model/wrn_gpu.h"
#include "nn/gpu_context.h"
#include "nn/xent.h"

/* The bias the convolution adds itself, and its gradient: none when the batch norm after it
 * takes them (bias_in_bn). */
static const float *own_bias(const wrn_conv *c) { return c->bias_in_bn ? NULL : c->b; }
static float *own_bias_grad(const wrn_conv *c) { return c->bias_in_bn ? NULL : c->db; }

/* The model's workspace when the cuDNN plan for c's shape fits it, else NULL (conv2d_cudnn's
 * own, grown once): a smaller last batch may choose algorithms that need more. */
static float *gpu_work(const wrn_conv *c, float *work)
{
    return work && conv2d_cudnn_work_floats(&c->d) <= c->work_floats ? work : NULL;
}

static void conv_forward(wrn_conv *c, float *out, const float *in, float *work)
{
    conv2d_cudnn_forward(out, in, c->w, own_bias(c), &c->d, gpu_work(c, work), c->work_floats);
}

static void conv_backward(wrn_conv *c, float *din, const float *dout, const float *in,
                          float *work)
{
    conv2d_cudnn_backward(din, c->dw, own_bias_grad(c), dout, in, c->w, &c->d, gpu_work(c, work),
                          c->work_floats);
}

static void conv_backward_set(wrn_conv *c, float *din, const float *dout, const float *in,
                              float *work)
{
    conv2d_cudnn_backward_set(din, c->dw, own_bias_grad(c), dout, in, c->w, &c->d,
                              gpu_work(c, work), c->work_floats);
}

static void bn_fwd(wrn_bn *bn, float *out, const float *in, int train)
{
    if (train)
        bn_forward_train_cuda(out, in, bn->gamma, bn->beta, bn->mean, bn->invstd, bn->run_mean,
                              bn->run_var, &bn->d);
    else
        bn_forward_infer_cuda(out, in, bn->gamma, bn->beta, bn->run_mean, bn->run_var, &bn->d);
}

static void bn_bwd(wrn_bn *bn, float *din, const float *dout, const float *in)
{
    bn_backward_cuda(din, bn->dgamma, bn->dbeta, dout, in, bn->gamma, bn->mean, bn->invstd,
                     &bn->d);
}

static void bn_relu_fwd(wrn_bn *bn, float *out, const float *in, const float *add, int train,
                        float p, uint64_t key)
{
    if (train)
        bn_relu_forward_train_pre_cuda(out, in, bn->pre, add, p, key, bn->gamma, bn->beta,
                                       bn->mean, bn->invstd, bn->run_mean, bn->run_var, &bn->d);
    else
        bn_relu_forward_infer_pre_cuda(out, in, bn->pre, add, bn->gamma, bn->beta, bn->run_mean,
                                       bn->run_var, &bn->d);
}

static void bn_relu_bwd(wrn_bn *bn, float *din, const float *dout, const float *in,
                        const float *relu_out, float p)
{
    bn_relu_backward_pre_cuda(din, bn->dpre, bn->dgamma, bn->dbeta, dout, in, bn->pre, relu_out,
                              p, bn->gamma, bn->beta, bn->mean, bn->invstd, &bn->d);
}

static void zero(float *p, size_t n) { gpu_context_zero(p, n * sizeof(float)); }

/* The batch goes up on the model's stream (wrn_gpu.h); the layers read the device's copy. */
static void batch_in(struct wrn_input *in, const float **x, const int **y, size_t B)
{
    if (B > 0)
        wrn_input_upload(in, *x, *y, B, x, y);
}

const wrn_ops WRN_OPS_CUDA = {
    .name = "cuda",
    .conv_forward = conv_forward,
    .conv_backward = conv_backward,
    .conv_backward_set = conv_backward_set,
    .bn_forward = bn_fwd,
    .bn_backward = bn_bwd,
    .bn_relu_forward = bn_relu_fwd,
    .bn_relu_backward = bn_relu_bwd,
    .maxpool_forward = maxpool2_forward_cuda,
    .maxpool_backward = maxpool2_backward_cuda,
    .gap_forward = gap_forward_cuda,
    .gap_backward = gap_backward_cuda,
    .dense_forward = dense_forward_cuda,
    .dense_backward = dense_backward_cuda,
    .xent_forward = xent_forward_cuda,
    .xent_backward = xent_backward_cuda,
    .xent_correct = xent_correct_cuda,
    .zero = zero,
    .add = wrn_add_cuda,
    .batch_in = batch_in,
};

#endif
