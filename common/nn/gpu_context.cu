/* gpu_context.cu — the cuDNN/cuBLAS handles and the stream of the layers' CUDA twins. See
 * gpu_context.h.
 * Public: gpu_context_init, gpu_context_release, gpu_context_sync, gpu_context_set_tf32,
 *         gpu_context_tf32, gpu_context_alloc, gpu_context_free, gpu_context_upload,
 *         gpu_context_download, gpu_context_zero, gpu_context_scratch, gpu_context_device,
 *         gpu_context_at_release, gpu_context_waited, gpu_context_wait, gpu_context_stream,
 *         gpu_context_cudnn, gpu_context_cublas.
 */
#include <stdlib.h>
#include <string.h>

#include "base/cuda_check.h"
#include "base/env_switch.h"
#include "nn/gpu_context.h"
extern "C" {
#include "base/timer.h"
}

#define GPU_CONTEXT_HOOKS 8

static struct {
    int ready;
    int device; /* current when the context was made; the only one it serves */
    int tf32;
    cudaStream_t stream;
    cudnnHandle_t cudnn;
    cublasHandle_t cublas;
    void *scratch;
    size_t scratch_bytes;
    void (*at_release[GPU_CONTEXT_HOOKS])(void);
    int nhooks;
} ctx;

/* The host's waits for the GPU, for the life of the process (not reset with the context). */
static double waited_s;
static long waits;

/* The handles, the stream and every plan and buffer made with them belong to ctx.device. */
static void check_device(void)
{
    int dev = -1;
    CUDA_CHECK(cudaGetDevice(&dev));
    if (dev != ctx.device)
        fatal_error("gpu_context: made on device %d, used on device %d (one context per process, "
                    "on one device)",
                    ctx.device, dev);
}

extern "C" void gpu_context_init(void)
{
    if (ctx.ready) {
        check_device();
        return;
    }
    CUDA_CHECK(cudaGetDevice(&ctx.device));
    ctx.tf32 = env_switch_on(SWITCH_TF32);
    /* Non-blocking: the stream does not wait for the legacy default stream, which libraries
     * and copies elsewhere in the process may use. */
    CUDA_CHECK(cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudnnCreate(&ctx.cudnn));
    CUDA_CHECK(cudnnSetStream(ctx.cudnn, ctx.stream));
    CUDA_CHECK(cublasCreate(&ctx.cublas));
    CUDA_CHECK(cublasSetStream(ctx.cublas, ctx.stream));
    /* Plain fp32 for cuBLAS whatever the TF32 setting: PyTorch's default for matmuls, and the
     * one product here (the 10-way dense layer) is too small for tensor cores to matter. */
    CUDA_CHECK(cublasSetMathMode(ctx.cublas, CUBLAS_DEFAULT_MATH));
    ctx.ready = 1;
}

extern "C" void gpu_context_release(void)
{
    if (!ctx.ready)
        return;
    check_device();
    CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
    /* last registered first: a later user may depend on an earlier one */
    for (int i = ctx.nhooks - 1; i >= 0; i--)
        ctx.at_release[i]();
    if (ctx.scratch)
        CUDA_CHECK(cudaFree(ctx.scratch));
    CUDA_CHECK(cublasDestroy(ctx.cublas));
    CUDA_CHECK(cudnnDestroy(ctx.cudnn));
    CUDA_CHECK(cudaStreamDestroy(ctx.stream));
    memset(&ctx, 0, sizeof ctx);
}

extern "C" int gpu_context_device(void)
{
    gpu_context_init();
    return ctx.device;
}

extern "C" void gpu_context_at_release(void (*fn)(void))
{
    gpu_context_init();
    for (int i = 0; i < ctx.nhooks; i++)
        if (ctx.at_release[i] == fn)
            return;
    if (ctx.nhooks == GPU_CONTEXT_HOOKS)
        fatal_error("gpu_context: more than %d release functions; raise GPU_CONTEXT_HOOKS",
                    GPU_CONTEXT_HOOKS);
    ctx.at_release[ctx.nhooks++] = fn;
}

extern "C" void gpu_context_wait(cudaStream_t stream, cudaEvent_t event)
{
    const double t0 = timer_seconds();
    if (event)
        CUDA_CHECK(cudaEventSynchronize(event));
    else
        CUDA_CHECK(cudaStreamSynchronize(stream));
    waited_s += timer_seconds() - t0;
    waits++;
}

extern "C" double gpu_context_waited(long *count)
{
    if (count)
        *count = waits;
    return waited_s;
}

extern "C" void gpu_context_sync(void)
{
    gpu_context_init();
    gpu_context_wait(ctx.stream, NULL);
}

extern "C" void gpu_context_set_tf32(int on)
{
    gpu_context_init();
    ctx.tf32 = on != 0;
}

extern "C" int gpu_context_tf32(void)
{
    gpu_context_init();
    return ctx.tf32;
}

extern "C" void *gpu_context_alloc(size_t bytes)
{
    gpu_context_init();
    void *p = NULL;
    CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 1));
    return p;
}

extern "C" void gpu_context_free(void *p)
{
    if (p)
        CUDA_CHECK(cudaFree(p));
}

extern "C" void gpu_context_upload(void *dst_device, const void *src_host, size_t bytes)
{
    gpu_context_init();
    CUDA_CHECK(cudaMemcpyAsync(dst_device, src_host, bytes, cudaMemcpyHostToDevice, ctx.stream));
    gpu_context_wait(ctx.stream, NULL);
}

extern "C" void gpu_context_download(void *dst_host, const void *src_device, size_t bytes)
{
    gpu_context_init();
    CUDA_CHECK(cudaMemcpyAsync(dst_host, src_device, bytes, cudaMemcpyDeviceToHost, ctx.stream));
    gpu_context_wait(ctx.stream, NULL);
}

extern "C" void gpu_context_zero(void *p, size_t bytes)
{
    gpu_context_init();
    CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, ctx.stream));
}

extern "C" void *gpu_context_scratch(size_t bytes)
{
    gpu_context_init();
    if (bytes > ctx.scratch_bytes) {
        /* Work still queued may read the old buffer. */
        gpu_context_wait(ctx.stream, NULL);
        if (ctx.scratch)
            CUDA_CHECK(cudaFree(ctx.scratch));
        ctx.scratch = NULL;
        ctx.scratch_bytes = 0;
        CUDA_CHECK(cudaMalloc(&ctx.scratch, bytes));
        ctx.scratch_bytes = bytes;
    }
    return ctx.scratch;
}

extern "C" cudaStream_t gpu_context_stream(void)
{
    gpu_context_init();
    return ctx.stream;
}

extern "C" cudnnHandle_t gpu_context_cudnn(void)
{
    gpu_context_init();
    return ctx.cudnn;
}

extern "C" cublasHandle_t gpu_context_cublas(void)
{
    gpu_context_init();
    return ctx.cublas;
}
