/* params_cuda.cu — the device side of params.h: the Keras L2 term on device buffers, an
 * allocation that reports a full GPU instead of stopping, the model's stream for C callers.
 * Public: params_add_l2_cuda, params_cuda_try_alloc, params_cuda_free_bytes, params_cuda_stream,
 *         params_cuda_scratch.
 */
#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#include "base/cuda_check.h"
#include "nn/gpu_context.h"

extern "C" {
#include "model/params.h"
}

#define L2_THREADS 256

/* Grid (L2_CHUNKS, views with decay): block (c, v) takes every L2_CHUNKS-th stretch of view v,
 * does g += 2·wd·w there and writes its Σw² in double to ss[v·L2_CHUNKS + c] (fixed tree order:
 * the same sum run after run). */
#define L2_CHUNKS 32
__global__ void l2_kernel(const float *__restrict__ w, float *__restrict__ g,
                          const size_t *__restrict__ off, const size_t *__restrict__ cnt, float wd,
                          double *__restrict__ ss)
{
    __shared__ double part[L2_THREADS];
    const size_t o = off[blockIdx.y], n = cnt[blockIdx.y];
    double s = 0.0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const float x = w[o + i];
        s += (double)x * x;
        g[o + i] += 2.0f * wd * x;
    }
    part[threadIdx.x] = s;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if ((int)threadIdx.x < k)
            part[threadIdx.x] += part[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        ss[(size_t)blockIdx.y * gridDim.x + blockIdx.x] = part[0];
}

/* The decayed views' offsets and counts on the device, kept with a host copy: uploaded again
 * only when a param_set with another layout comes (a second model in a test). Freed with the
 * context. */
static struct {
    int ndecay;
    size_t *host; /* (2·ndecay): offsets, then counts */
    size_t *dev;
} table;

static void drop_table(void)
{
    gpu_context_free(table.dev);
    free(table.host);
    table.dev = table.host = NULL;
    table.ndecay = 0;
}

static void upload_table(const param_set *ps)
{
    size_t *h = (size_t *)malloc(2 * (size_t)(ps->nviews + 1) * sizeof *h);
    if (!h)
        fatal_error("params_add_l2_cuda: out of memory for %d views", ps->nviews);
    int k = 0;
    for (int v = 0; v < ps->nviews; v++)
        if (ps->views[v].decay)
            h[k++] = ps->views[v].offset;
    for (int v = 0, j = 0; v < ps->nviews; v++)
        if (ps->views[v].decay)
            h[k + j++] = ps->views[v].count;
    if (table.dev && table.ndecay == k && memcmp(h, table.host, 2 * (size_t)k * sizeof *h) == 0) {
        free(h);
        return;
    }
    drop_table();
    gpu_context_at_release(drop_table);
    table.dev = (size_t *)gpu_context_alloc(2 * (size_t)(k ? k : 1) * sizeof *h);
    gpu_context_upload(table.dev, h, 2 * (size_t)k * sizeof *h);
    table.host = h;
    table.ndecay = k;
}

extern "C" double params_add_l2_cuda(param_set *ps, float wd)
{
    upload_table(ps);
    const int k = table.ndecay;
    if (k == 0)
        return 0.0;
    const size_t nss = (size_t)k * L2_CHUNKS;
    double *ss = (double *)gpu_context_scratch(nss * sizeof(double));
    l2_kernel<<<dim3(L2_CHUNKS, (unsigned)k), L2_THREADS, 0, gpu_context_stream()>>>(
        ps->params, ps->grads, table.dev, table.dev + k, wd, ss);
    CUDA_CHECK_LAUNCH(gpu_context_stream());
    double *h = (double *)malloc(nss * sizeof *h);
    if (!h)
        fatal_error("params_add_l2_cuda: out of memory");
    gpu_context_download(h, ss, nss * sizeof *h);
    double sum = 0.0; /* views in model order, as params_add_l2 adds them */
    for (size_t v = 0; v < nss; v++)
        sum += h[v];
    free(h);
    return wd * sum;
}

extern "C" float *params_cuda_try_alloc(size_t bytes)
{
    gpu_context_init();
    void *p = NULL;
    const cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError(); /* a full GPU is the caller's message, not a sticky error */
        return NULL;
    }
    CUDA_CHECK(e);
    return (float *)p;
}

extern "C" size_t params_cuda_free_bytes(void)
{
    size_t free_b = 0, total = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total));
    return free_b;
}

extern "C" void *params_cuda_stream(void) { return (void *)gpu_context_stream(); }

extern "C" void *params_cuda_scratch(size_t bytes) { return gpu_context_scratch(bytes); }
