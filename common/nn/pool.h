/* pool.h — 2x2 max pooling (stride 2, "valid": odd trailing rows/columns dropped, as Keras'
 * MaxPooling2D((2, 2))) and global average pooling. NCHW float32.
 *
 * Max-pool backward needs no saved indices: it finds, in each window, the first input (row-major
 * order) equal to the pooled output, which is the element forward chose (forward keeps the first
 * of equal maxima, like PyTorch).
 *
 * Public: maxpool2_forward, maxpool2_backward, gap_forward, gap_backward; with HVDLAB_CUDA the
 *         same names + _cuda.
 */
#ifndef HVDLAB_POOL_H
#define HVDLAB_POOL_H

typedef struct {
    int n, c, h, w; /* input (N, C, H, W); max-pool output (N, C, H/2, W/2), GAP output (N, C) */
    int nhwc;       /* CUDA twins only: 1 when input and max-pool output are (N, H, W, C) (a GPU
                     * model with HVDLAB_ACTIVATION_LAYOUT=nhwc; GAP's output stays (N, C)); the
                     * CPU functions take NCHW only */
} pool_dims;

void maxpool2_forward(float *out /* (N,C,H/2,W/2) */, const float *in /* (N,C,H,W) */,
                      const pool_dims *d);
void maxpool2_backward(float *din /* (N,C,H,W) += */, const float *dout /* (N,C,H/2,W/2) */,
                       const float *in /* (N,C,H,W) */, const float *out /* (N,C,H/2,W/2) */,
                       const pool_dims *d);

void gap_forward(float *out /* (N,C) */, const float *in /* (N,C,H,W) */, const pool_dims *d);
void gap_backward(float *din /* (N,C,H,W) += */, const float *dout /* (N,C) */,
                  const pool_dims *d);

#ifdef HVDLAB_CUDA
/* CUDA twins (pool_cuda.cu): device pointers, the stream of nn/gpu_context.h; each output is
 * computed with the CPU's float operations in the CPU's order, so the results are the same bits. */
void maxpool2_forward_cuda(float *out, const float *in, const pool_dims *d);
void maxpool2_backward_cuda(float *din, const float *dout, const float *in, const float *out,
                            const pool_dims *d);
void gap_forward_cuda(float *out, const float *in, const pool_dims *d);
void gap_backward_cuda(float *din, const float *dout, const pool_dims *d);
#endif

#endif
