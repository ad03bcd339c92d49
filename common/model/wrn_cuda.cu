/* wrn_cuda.cu — the model's own device code: the identity shortcut's gradient add and the input
 * pipeline (pinned, double-buffered host staging; see wrn_gpu.h).
 * Public: wrn_add_cuda, wrn_input_create, wrn_input_free, wrn_input_bytes, wrn_input_upload.
 */
#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#include "base/cuda_check.h"
#include "nn/gpu_context.h"

/* wrn_gpu.h declares these for C, without extern "C"; the definitions below give the same
 * extern "C" names. */
struct wrn_input;

#define WRN_PIXELS (28 * 28)

__global__ void add_kernel(float *__restrict__ din, const float *__restrict__ dout, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        din[i] += dout[i];
}

extern "C" void wrn_add_cuda(float *din, const float *dout, size_t n)
{
    if (n == 0)
        return;
    add_kernel<<<gpu_blocks(n), GPU_THREADS, 0, gpu_context_stream()>>>(din, dout, n);
    CUDA_CHECK_LAUNCH(gpu_context_stream());
}

struct wrn_input {
    size_t max_batch;
    int next;           /* the pinned buffer the next batch goes through */
    float *hx[2];       /* pinned (max_batch, 784) */
    int *hy[2];         /* pinned (max_batch) */
    cudaEvent_t done[2]; /* recorded after each buffer's upload */
    int used[2];        /* an event was recorded for the buffer */
    float *dx;          /* device (max_batch, 784) */
    int *dy;            /* device (max_batch) */
};

extern "C" size_t wrn_input_bytes(size_t max_batch)
{
    return max_batch * (WRN_PIXELS * sizeof(float) + sizeof(int));
}

extern "C" void wrn_input_free(wrn_input *in)
{
    if (!in)
        return;
    for (int i = 0; i < 2; i++) {
        if (in->used[i])
            CUDA_CHECK(cudaEventSynchronize(in->done[i]));
        if (in->done[i])
            CUDA_CHECK(cudaEventDestroy(in->done[i]));
        if (in->hx[i])
            CUDA_CHECK(cudaFreeHost(in->hx[i]));
        if (in->hy[i])
            CUDA_CHECK(cudaFreeHost(in->hy[i]));
    }
    gpu_context_free(in->dx);
    gpu_context_free(in->dy);
    free(in);
}

/* NULL instead of a stop when memory runs out: the model names what it needed. */
static bool try_alloc(void **p, size_t bytes, bool pinned)
{
    const cudaError_t e = pinned ? cudaMallocHost(p, bytes) : cudaMalloc(p, bytes);
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        *p = NULL;
        return false;
    }
    CUDA_CHECK(e);
    return true;
}

extern "C" wrn_input *wrn_input_create(size_t max_batch)
{
    gpu_context_init();
    wrn_input *in = (wrn_input *)calloc(1, sizeof *in);
    if (!in)
        return NULL;
    in->max_batch = max_batch;
    bool ok = true;
    for (int i = 0; i < 2 && ok; i++) {
        ok = try_alloc((void **)&in->hx[i], max_batch * WRN_PIXELS * sizeof(float), true) &&
             try_alloc((void **)&in->hy[i], max_batch * sizeof(int), true);
        if (ok) /* timing off: the event only orders */
            CUDA_CHECK(cudaEventCreateWithFlags(&in->done[i], cudaEventDisableTiming));
    }
    ok = ok && try_alloc((void **)&in->dx, max_batch * WRN_PIXELS * sizeof(float), false) &&
         try_alloc((void **)&in->dy, max_batch * sizeof(int), false);
    if (!ok) {
        wrn_input_free(in);
        return NULL;
    }
    return in;
}

extern "C" void wrn_input_upload(wrn_input *in, const float *x, const int *y, size_t B,
                                 const float **dx, const int **dy)
{
    const int k = in->next;
    in->next = 1 - k;
    if (in->used[k]) /* this pinned buffer's last upload must have left it */
        gpu_context_wait(NULL, in->done[k]);
    memcpy(in->hx[k], x, B * WRN_PIXELS * sizeof(float));
    memcpy(in->hy[k], y, B * sizeof(int));
    cudaStream_t s = gpu_context_stream();
    CUDA_CHECK(cudaMemcpyAsync(in->dx, in->hx[k], B * WRN_PIXELS * sizeof(float),
                               cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(in->dy, in->hy[k], B * sizeof(int), cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaEventRecord(in->done[k], s));
    in->used[k] = 1;
    *dx = in->dx;
    *dy = in->dy;
}
