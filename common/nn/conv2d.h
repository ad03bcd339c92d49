/* conv2d.h — 2-D convolution, stride 1, "same" padding (k/2), k = 1 or 3, with bias. NCHW.
 *
 * CPU path: im2col in chunks + OpenBLAS cblas_sgemm. Weights in PyTorch order (Cout, Cin, k, k).
 * The workspace is allocated once by the caller (conv2d_work_floats) and reused every call.
 * Backward accumulates (+=) into din, dw and db; any of them may be NULL to skip it.
 *
 * Backends: conv2d_forward/backward run one of
 *   "gemm"  im2col + OpenBLAS sgemm (conv2d_gemm_*, conv2d_gemm.c): the readable reference;
 *   "dnnl"  oneDNN's direct convolutions (conv2d_dnnl.h), 2-3x faster on the narrow layers;
 *           present when the build found Debian's libdnnl-dev, and then the default.
 * HVDLAB_CONV=gemm|dnnl in the environment, or conv2d_set_backend(), chooses. Both give the
 * same results up to float rounding (tests/unit/test_conv_backends.c). conv2d_work_floats covers
 * every backend and does not depend on d->n (the batch goes through in fixed-size pieces).
 *
 * Public: conv2d_work_floats, conv2d_forward, conv2d_backward, conv2d_backward_set,
 *         conv2d_set_backend, conv2d_backend, conv2d_gemm_work_floats, conv2d_gemm_forward,
 *         conv2d_gemm_backward;
 *         with HVDLAB_CUDA conv2d_cudnn_work_floats, conv2d_cudnn_forward, conv2d_cudnn_backward,
 *         conv2d_cudnn_backward_set, conv2d_cudnn_algos, conv2d_cudnn_release.
 */
#ifndef HVDLAB_CONV2D_H
#define HVDLAB_CONV2D_H

#include <stddef.h>

typedef struct {
    int n, cin, h, w; /* input (N, Cin, H, W) */
    int cout, k;      /* output (N, Cout, H, W); kernel k x k, k in {1, 3} */
    int blocked;      /* 0: NCHW (every backend). 1 (dnnl backend only): every activation whose
                       * channel count is a multiple of 16 (in, out, din, dout) is in oneDNN's
                       * nChw16c layout (nn/blocked16.h), the others NCHW (the stem's 1-channel
                       * image); weights stay (Cout,Cin,k,k) */
    int nhwc;         /* CUDA twins only: 1 when in, out, din and dout are (N, H, W, C) (a GPU
                       * model with HVDLAB_ACTIVATION_LAYOUT=nhwc); weights stay (Cout,Cin,k,k) */
} conv2d_dims;

size_t conv2d_work_floats(const conv2d_dims *d);

void conv2d_forward(float *out /* (N,Cout,H,W) */, const float *in /* (N,Cin,H,W) */,
                    const float *w /* (Cout,Cin,k,k) */, const float *b /* (Cout) or NULL */,
                    const conv2d_dims *d, float *work /* (conv2d_work_floats) */);

void conv2d_backward(float *din /* (N,Cin,H,W) += or NULL */, float *dw /* (Cout,Cin,k,k) += */,
                     float *db /* (Cout) += or NULL */, const float *dout /* (N,Cout,H,W) */,
                     const float *in, const float *w, const conv2d_dims *d, float *work);

/* conv2d_backward with din overwritten (=), not added to; dw and db still +=. For a din that
 * would otherwise be zeroed first: on the oneDNN path it saves that zeroing and the slower
 * adding reorder (conv2d_dnnl.c). Same values as zeroing din and calling conv2d_backward (a
 * zero may come out as -0). */
void conv2d_backward_set(float *din /* (N,Cin,H,W) = or NULL */,
                         float *dw /* (Cout,Cin,k,k) += */, float *db /* (Cout) += or NULL */,
                         const float *dout /* (N,Cout,H,W) */, const float *in, const float *w,
                         const conv2d_dims *d, float *work);

/* "gemm" or "dnnl": 0, or -1 (backend unchanged) for a name this build does not have. */
int conv2d_set_backend(const char *name);
const char *conv2d_backend(void);

/* The im2col + sgemm path, whatever the backend. */
size_t conv2d_gemm_work_floats(const conv2d_dims *d);
void conv2d_gemm_forward(float *out, const float *in, const float *w, const float *b,
                         const conv2d_dims *d, float *work);
void conv2d_gemm_backward(float *din, float *dw, float *db, const float *dout, const float *in,
                          const float *w, const conv2d_dims *d, float *work);

#ifdef HVDLAB_CUDA
/* CUDA twin (conv2d_cudnn.cu): cuDNN's convolutions on device pointers, NCHW (NHWC with
 * d->nhwc), on the stream of nn/gpu_context.h; forward overwrites out, backward accumulates (+=)
 * into din, dw, db (any may be NULL), as on the CPU. For each shape (N and the layout included)
 * and TF32 setting the algorithms are chosen once — measured by cudnnFind*, the fastest whose
 * workspace fits CONV2D_CUDNN_MAX_WORK_BYTES, cuDNN's heuristics (Get*_v7) if none does — and
 * cached until gpu_context_release.
 * Determinism: only algorithms cuDNN marks deterministic are chosen (the same input gives the
 * same bits, run after run, like PyTorch's torch.backends.cudnn.deterministic);
 * HVDLAB_CUDNN_DETERMINISTIC=0 in the environment (read at the first plan of a context) allows
 * the others too, which may be faster (backward-filter ALGO_0/3 add with atomics).
 * Bias gradient: cuDNN's cudnnConvolutionBackwardBias, or with HVDLAB_BIAS_GRAD_CUBLAS=1 (read
 * at the first plan of a context, like the switch above) two cuBLAS matrix-vector products.
 * Workspace: conv2d_cudnn_work_floats(d) is what those algorithms need for d (its batch d->n and
 * the TF32 setting included); pass a device buffer of work_floats floats, at least that many,
 * or work = NULL (work_floats ignored) for one workspace owned by this file, grown when a shape
 * needs more. A buffer smaller than the plan needs stops the process, naming both sizes.
 * conv2d_cudnn_algos writes the algorithms chosen for d into buf, for messages.
 * conv2d_cudnn_release frees the plans and the shared workspace (gpu_context_release calls
 * it). */
#define CONV2D_CUDNN_MAX_WORK_BYTES ((size_t)1 << 30)
size_t conv2d_cudnn_work_floats(const conv2d_dims *d);
void conv2d_cudnn_forward(float *out, const float *in, const float *w, const float *b,
                          const conv2d_dims *d, float *work, size_t work_floats);
void conv2d_cudnn_backward(float *din, float *dw, float *db, const float *dout, const float *in,
                           const float *w, const conv2d_dims *d, float *work, size_t work_floats);
/* conv2d_cudnn_backward with din overwritten (=), as conv2d_backward_set: din is not read, so it
 * need not be zeroed first; dw and db still +=. */
void conv2d_cudnn_backward_set(float *din, float *dw, float *db, const float *dout,
                               const float *in, const float *w, const conv2d_dims *d, float *work,
                               size_t work_floats);
void conv2d_cudnn_algos(const conv2d_dims *d, char *buf, size_t len);
void conv2d_cudnn_release(void);
#endif

#endif
