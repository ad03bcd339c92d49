/* optim_cuda.h — the optimizers' kernels over device buffers (optim_cuda.cu), on the model's
 * stream (params_device_stream). The same float operations as sgd.c, novograd.c, optim.c and
 * diverge.c, in the same order per element (nvcc --fmad=false), so an update differs from the
 * CPU's only through the inputs. Only in CUDA builds.
 *
 * Public: optim_sgd_cuda, optim_novograd_cuda, optim_novograd_aux_bytes, optim_accumulate_cuda,
 *         optim_non_finite_cuda, optim_scale_cuda.
 */
#ifndef HVDLAB_OPTIM_CUDA_H
#define HVDLAB_OPTIM_CUDA_H

#ifdef HVDLAB_CUDA
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* v = momentum·v − lr·g; w += v. */
void optim_sgd_cuda(float *v, float *w, const float *g, size_t n, float momentum, float lr);

/* NovoGrad over T tensors at (off[t], cnt[t]) (host arrays, kept by the caller after the call:
 * their copies up may still be queued): ‖g_t‖² by a device reduction in double, v[t] updated,
 * then the elementwise update of w and m. aux: device memory of optim_novograd_aux_bytes(T)
 * bytes (the tables and partial sums). */
size_t optim_novograd_aux_bytes(int T);
void optim_novograd_cuda(float *w, const float *g, float *m, float *v, const size_t *off,
                         const size_t *cnt, int T, void *aux, float beta1, float beta2, float eps,
                         float wd, float avg, float lr, int first);

/* a += g; when last: g = a, a = 0 (optim.c's local accumulation). */
void optim_accumulate_cuda(float *a, float *g, size_t n, int last);

/* x *= f (the loss scaler's unscale: f = 1/S). */
void optim_scale_cuda(float *x, size_t n, float f);

/* NaN and Inf values in x; *first: the index of the first one (n when none). Waits. */
size_t optim_non_finite_cuda(const float *x, size_t n, size_t *first);

#ifdef __cplusplus
}
#endif

#endif
#endif
