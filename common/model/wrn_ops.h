/* wrn_ops.h — the table of layer implementations a model runs on, picked once when the model
 * is built (wrn_place_mark): the CPU's NCHW reference layers, the CPU's nChw16c layers (oneDNN's
 * blocked layout, nn/blocked16.h) or the CUDA/cuDNN twins. Every layer struct (wrn_conv, wrn_bn,
 * wrn_block) and the model hold a pointer to it, and wrn.c and wrn_block.c call each layer once,
 * through it: no layer call asks where it runs.
 *
 * The entries take the layer struct where a layer has one (its pointers, dims, bias folding and
 * workspace are the table's business) and the nn/ arguments otherwise; dims' n is set by the
 * caller. Internal to model/.
 *
 * Public (to model/): wrn_ops, WRN_OPS_CPU, WRN_OPS_CPU_BLOCKED (wrn_ops_cpu.c), WRN_OPS_GPU
 *                     (wrn_ops_cuda.c in a CUDA build; NULL in a CPU build, which builds no GPU
 *                     model).
 */
#ifndef HVDLAB_WRN_OPS_H
#define HVDLAB_WRN_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "nn/dense.h"
#include "nn/pool.h"

typedef struct wrn_conv wrn_conv;
typedef struct wrn_bn wrn_bn;
struct wrn_input;

typedef struct wrn_ops {
    const char *name; /* "cpu", "cpu nChw16c", "cuda" */
    /* Convolution: out = conv(in); backward din += (backward_set: din =), dw and db +=. */
    void (*conv_forward)(wrn_conv *c, float *out, const float *in, float *work);
    void (*conv_backward)(wrn_conv *c, float *din, const float *dout, const float *in,
                          float *work);
    void (*conv_backward_set)(wrn_conv *c, float *din, const float *dout, const float *in,
                              float *work);
    /* Plain batch norm (NCHW only: wrn_block.c refuses the others before the call). */
    void (*bn_forward)(wrn_bn *bn, float *out, const float *in, int train);
    void (*bn_backward)(wrn_bn *bn, float *din, const float *dout, const float *in);
    /* Fused batch norm + ReLU (+ dropout p with key when training) (+ add, or NULL). */
    void (*bn_relu_forward)(wrn_bn *bn, float *out, const float *in, const float *add, int train,
                            float p, uint64_t key);
    void (*bn_relu_backward)(wrn_bn *bn, float *din, const float *dout, const float *in,
                             const float *relu_out, float p);
    void (*maxpool_forward)(float *out, const float *in, const pool_dims *d);
    void (*maxpool_backward)(float *din, const float *dout, const float *in, const float *out,
                             const pool_dims *d);
    void (*gap_forward)(float *out, const float *in, const pool_dims *d);
    void (*gap_backward)(float *din, const float *dout, const pool_dims *d);
    void (*dense_forward)(float *out, const float *in, const float *w, const float *b,
                          const dense_dims *d);
    void (*dense_backward)(float *din, float *dw, float *db, const float *dout, const float *in,
                           const float *w, const dense_dims *d);
    double (*xent_forward)(float *probs, const float *logits, const int *labels, int n, int k);
    void (*xent_backward)(float *dlogits, const float *probs, const int *labels, int n, int k,
                          float scale);
    int (*xent_correct)(const float *logits, const int *labels, int n, int k);
    void (*zero)(float *p, size_t n);                   /* p[0..n) = 0 */
    void (*add)(float *din, const float *dout, size_t n); /* din[i] += dout[i] */
    /* *x, *y: where the batch's B images and labels are for the layers (the GPU: uploaded
     * through in, wrn_gpu.h; the CPU: where they are). */
    void (*batch_in)(struct wrn_input *in, const float **x, const int **y, size_t B);
} wrn_ops;

extern const wrn_ops WRN_OPS_CPU, WRN_OPS_CPU_BLOCKED;

#ifdef HVDLAB_CUDA
extern const wrn_ops WRN_OPS_CUDA;
#define WRN_OPS_GPU (&WRN_OPS_CUDA)
#else
#define WRN_OPS_GPU ((const wrn_ops *)0) /* never asked for: wrn_place_wanted is 0 */
#endif

#endif
