/* conv2d.h — 2-D convolution, stride 1, "same" padding (k/2), k = 1 or 3, with bias. NCHW.
 *
 * CPU path: im2col in chunks + OpenBLAS cblas_sgemm. Weights in PyTorch order (Cout, Cin, k, k).
 * The workspace is allocated once by the caller (conv2d_work_floats) and reused every call.
 * Backward accumulates (+=) into din, dw and db; any of them may be NULL to skip it.
 */
#ifndef HVDLAB_CONV2D_H
#define HVDLAB_CONV2D_H

#include <stddef.h>

typedef struct {
    int n, cin, h, w; /* input (N, Cin, H, W) */
    int cout, k;      /* output (N, Cout, H, W); kernel k x k, k in {1, 3} */
} conv2d_dims;

size_t conv2d_work_floats(const conv2d_dims *d);

void conv2d_forward(float *out /* (N,Cout,H,W) */, const float *in /* (N,Cin,H,W) */,
                    const float *w /* (Cout,Cin,k,k) */, const float *b /* (Cout) or NULL */,
                    const conv2d_dims *d, float *work /* (conv2d_work_floats) */);

void conv2d_backward(float *din /* (N,Cin,H,W) += or NULL */, float *dw /* (Cout,Cin,k,k) += */,
                     float *db /* (Cout) += or NULL */, const float *dout /* (N,Cout,H,W) */,
                     const float *in, const float *w, const conv2d_dims *d, float *work);

#endif
