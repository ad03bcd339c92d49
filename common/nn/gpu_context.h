/* gpu_context.h — the GPU state the layers' CUDA twins share: one cuDNN handle, one cuBLAS
 * handle and one non-blocking stream that both are bound to, on the device current when the
 * context is first used (hvd_pin_device picks it). One context per process, as one rank drives
 * one GPU: a call made while another device is current stops the process (the handles, the
 * stream, conv2d_cudnn's plans and workspace all belong to the first device). Every twin
 * enqueues its work on this stream and returns without waiting; the calls that return a value
 * to the host (xent_forward_cuda, xent_correct_cuda, gpu_context_download) wait for the stream.
 *
 * Why here and not in hvd/device_cuda.cu: the handles are the layers' tools, and nn/ may only
 * include base/, so the layers could not reach them in hvd/. Device choice stays in hvd/.
 *
 * TF32: cuDNN convolutions may use TF32 tensor cores unless turned off, as PyTorch's do;
 * HVDLAB_TF32=0 in the environment (read when the context is made) or gpu_context_set_tf32(0)
 * turns it off (conv2d_cudnn keeps a plan per setting). cuBLAS always computes in plain fp32,
 * PyTorch's default for matmuls. Correctness tests run with TF32 off.
 *
 * Errors stop the process (CUDA_CHECK, base/cuda_check.h); there is nothing to recover.
 * Kernel faults surface at a later call unless HVDLAB_CUDA_SYNC=1 (cuda_check.h): then each
 * twin waits after its launches and a fault names the line that launched it.
 * Only in CUDA builds (HVDLAB_CUDA); everything here takes and returns device pointers except
 * the host side of upload/download.
 *
 * Public: gpu_context_init, gpu_context_release, gpu_context_sync, gpu_context_set_tf32,
 *         gpu_context_tf32, gpu_context_alloc, gpu_context_free, gpu_context_upload,
 *         gpu_context_download, gpu_context_zero, gpu_context_scratch, gpu_context_device,
 *         gpu_context_at_release, gpu_context_waited; in CUDA C++ also
 *         gpu_context_wait, gpu_context_stream, gpu_context_cudnn, gpu_context_cublas.
 */
#ifndef HVDLAB_GPU_CONTEXT_H
#define HVDLAB_GPU_CONTEXT_H

#ifdef HVDLAB_CUDA

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Creates the handles and the stream on the current device and remembers that device (first
 * call); later calls (every function here makes one) stop the process if another device is
 * current. */
void gpu_context_init(void);
/* Waits for the stream, runs the functions registered with gpu_context_at_release (conv2d_cudnn's
 * plans and workspace go there), frees the handles, the stream and the scratch. The next use
 * makes a new context, on the device current then. */
void gpu_context_release(void);
/* The device the context serves. */
int gpu_context_device(void);
/* fn is called by gpu_context_release, before the handles go (once however often it is
 * registered; registrations end with the context). For state made with the context's handles. */
void gpu_context_at_release(void (*fn)(void));
/* Waits until everything enqueued on the stream has run. */
void gpu_context_sync(void);
/* The seconds the host has spent waiting for the GPU in gpu_context_wait (every wait of the
 * context's functions and of the twins that return a value goes through it), and in *count
 * (when not NULL) how many waits, since the process started. Over a training step, the step's
 * time less these seconds is the host's own: when that is most of the step, the host (kernel
 * launches, its own work) limits the step, not the GPU (bench/train_speed_gpu prints both). */
double gpu_context_waited(long *count);

void gpu_context_set_tf32(int on);
int gpu_context_tf32(void);

/* Device memory (cudaMalloc: 256-byte aligned); free(NULL) is a no-op. */
void *gpu_context_alloc(size_t bytes);
void gpu_context_free(void *p);
/* Host <-> device copies on the stream; both return once the copy is done. */
void gpu_context_upload(void *dst_device, const void *src_host, size_t bytes);
void gpu_context_download(void *dst_host, const void *src_device, size_t bytes);
/* bytes of zeros at p, enqueued on the stream. */
void gpu_context_zero(void *p, size_t bytes);
/* A device buffer of at least bytes owned by the context, for a twin's small results; valid
 * until the next call (growing it waits for the stream). */
void *gpu_context_scratch(size_t bytes);

#ifdef __cplusplus
}
#endif

#ifdef __CUDACC__
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

extern "C" {
/* Waits for event, or for the whole stream when event is NULL, counted in gpu_context_waited. */
void gpu_context_wait(cudaStream_t stream, cudaEvent_t event);
cudaStream_t gpu_context_stream(void);
cudnnHandle_t gpu_context_cudnn(void);
cublasHandle_t gpu_context_cublas(void);
}

/* Grid for an elementwise kernel of n items with GPU_THREADS threads a block: enough blocks to
 * fill the device a few times over; the kernels loop (grid-stride) over the rest. */
#define GPU_THREADS 256
static inline unsigned gpu_blocks(size_t n)
{
    const size_t max_blocks = 4096, b = (n + GPU_THREADS - 1) / GPU_THREADS;
    return (unsigned)(b < 1 ? 1 : b > max_blocks ? max_blocks : b);
}
#endif

#endif /* HVDLAB_CUDA */
#endif
