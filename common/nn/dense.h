/* dense.h — fully connected layer out = in · Wᵀ + b through OpenBLAS, weights (out, in) in
 * PyTorch order (Keras stores the transpose).
 *
 * Public: dense_forward, dense_backward; with HVDLAB_CUDA dense_forward_cuda,
 *         dense_backward_cuda.
 */
#ifndef HVDLAB_DENSE_H
#define HVDLAB_DENSE_H

typedef struct {
    int n, in, out; /* batch, input features, output features */
} dense_dims;

void dense_forward(float *out /* (N,out) */, const float *in /* (N,in) */,
                   const float *w /* (out,in) */, const float *b /* (out) or NULL */,
                   const dense_dims *d);

/* din, dw, db += (any may be NULL). */
void dense_backward(float *din /* (N,in) += */, float *dw /* (out,in) += */,
                    float *db /* (out) += */, const float *dout /* (N,out) */,
                    const float *in /* (N,in) */, const float *w /* (out,in) */,
                    const dense_dims *d);

#ifdef HVDLAB_CUDA
/* CUDA twins (dense_cuda.cu): device pointers, cuBLAS sgemm (plain fp32) on the stream of
 * nn/gpu_context.h; the bias sums add in the CPU's order. */
void dense_forward_cuda(float *out, const float *in, const float *w, const float *b,
                        const dense_dims *d);
void dense_backward_cuda(float *din, float *dw, float *db, const float *dout, const float *in,
                         const float *w, const dense_dims *d);
#endif

#endif
