/* optim_cuda.cu — SGD-momentum and NovoGrad updates, gradient accumulation and the NaN/Inf
 * count as kernels over the flat device buffers. See optim_cuda.h.
 * Public: optim_sgd_cuda, optim_novograd_cuda, optim_novograd_aux_bytes, optim_accumulate_cuda,
 *         optim_non_finite_cuda, optim_scale_cuda.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "base/cuda_check.h"

extern "C" {
#include "model/params.h"
}
#include "optim/optim_cuda.h"

#define OPT_THREADS 256
#define NOV_CHUNKS 32 /* blocks per tensor for ‖g‖² */

static cudaStream_t stream(void) { return (cudaStream_t)params_device_stream(); }

static unsigned blocks_for(size_t n)
{
    const size_t b = (n + OPT_THREADS - 1) / OPT_THREADS;
    return (unsigned)(b < 1 ? 1 : b > 4096 ? 4096 : b);
}

#define GRID_STRIDE(i, n)                                                                          \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                       \
         i += (size_t)gridDim.x * blockDim.x)

__global__ void sgd_kernel(float *__restrict__ v, float *__restrict__ w,
                           const float *__restrict__ g, size_t n, float momentum, float lr)
{
    GRID_STRIDE(i, n)
    {
        v[i] = momentum * v[i] - lr * g[i];
        w[i] += v[i];
    }
}

extern "C" void optim_sgd_cuda(float *v, float *w, const float *g, size_t n, float momentum,
                               float lr)
{
    if (n == 0)
        return;
    sgd_kernel<<<blocks_for(n), OPT_THREADS, 0, stream()>>>(v, w, g, n, momentum, lr);
    CUDA_CHECK_LAUNCH(stream());
}

/* ---- NovoGrad ------------------------------------------------------------------------------ */

/* aux: off (T size_t), cnt (T size_t), partial (T·NOV_CHUNKS double). */
extern "C" size_t optim_novograd_aux_bytes(int T)
{
    return (size_t)T * (2 * sizeof(size_t) + NOV_CHUNKS * sizeof(double));
}

/* Block (c, t): its share of Σg² of tensor t, fixed tree order, into partial[t·CHUNKS + c]. */
__global__ void sumsq_kernel(const float *__restrict__ g, const size_t *__restrict__ off,
                             const size_t *__restrict__ cnt, double *__restrict__ partial)
{
    __shared__ double part[OPT_THREADS];
    const size_t o = off[blockIdx.y], n = cnt[blockIdx.y];
    double s = 0.0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        s += (double)g[o + i] * (double)g[o + i];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if ((int)threadIdx.x < k)
            part[threadIdx.x] += part[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        partial[(size_t)blockIdx.y * gridDim.x + blockIdx.x] = part[0];
}

/* One thread per tensor: v_t as novograd.c's update_tensor computes it. */
__global__ void second_moment_kernel(const double *__restrict__ partial, float *__restrict__ v,
                                     int T, float beta2, int first)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T)
        return;
    double ss = 0.0;
    for (int c = 0; c < NOV_CHUNKS; c++)
        ss += partial[(size_t)t * NOV_CHUNKS + c];
    const float g2 = (float)ss;
    v[t] = first ? g2 : beta2 * v[t] + (1.0f - beta2) * g2;
}

/* Grid (x, T): the elementwise update of tensor blockIdx.y. */
__global__ void novograd_kernel(float *__restrict__ w, const float *__restrict__ g,
                                float *__restrict__ m, const float *__restrict__ v,
                                const size_t *__restrict__ off, const size_t *__restrict__ cnt,
                                float beta1, float eps, float wd, float avg, float lr)
{
    const size_t o = off[blockIdx.y], n = cnt[blockIdx.y];
    const float denom = sqrtf(v[blockIdx.y]) + eps;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float gp = g[o + i] / denom;
        if (wd > 0.0f)
            gp += wd * w[o + i];
        gp *= avg;
        m[o + i] = beta1 * m[o + i] - lr * gp;
        w[o + i] += m[o + i];
    }
}

extern "C" void optim_novograd_cuda(float *w, const float *g, float *m, float *v,
                                    const size_t *off, const size_t *cnt, int T, void *aux,
                                    float beta1, float beta2, float eps, float wd, float avg,
                                    float lr, int first)
{
    if (T <= 0)
        return;
    size_t *doff = (size_t *)aux, *dcnt = doff + T;
    double *partial = (double *)(dcnt + T);
    cudaStream_t s = stream();
    /* the tables are tiny; copying them each step keeps aux free of any notion of "uploaded" */
    CUDA_CHECK(cudaMemcpyAsync(doff, off, (size_t)T * sizeof(size_t), cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(dcnt, cnt, (size_t)T * sizeof(size_t), cudaMemcpyHostToDevice, s));
    size_t most = 0;
    for (int t = 0; t < T; t++)
        most = cnt[t] > most ? cnt[t] : most;
    sumsq_kernel<<<dim3(NOV_CHUNKS, (unsigned)T), OPT_THREADS, 0, s>>>(g, doff, dcnt, partial);
    CUDA_CHECK_LAUNCH(s);
    second_moment_kernel<<<(T + OPT_THREADS - 1) / OPT_THREADS, OPT_THREADS, 0, s>>>(
        partial, v, T, beta2, first);
    CUDA_CHECK_LAUNCH(s);
    unsigned bx = blocks_for(most);
    bx = bx > 64 ? 64 : bx; /* T tensors side by side already fill the GPU */
    novograd_kernel<<<dim3(bx, (unsigned)T), OPT_THREADS, 0, s>>>(w, g, m, v, doff, dcnt, beta1,
                                                                   eps, wd, avg, lr);
    CUDA_CHECK_LAUNCH(s);
    /* off and cnt are the caller's pageable host memory, which it keeps: CUDA promises no more
     * than that such a copy "might be synchronous". */
}

/* ---- accumulation and the NaN/Inf check ------------------------------------------------- */

__global__ void accumulate_kernel(float *__restrict__ a, float *__restrict__ g, size_t n,
                                  int last)
{
    GRID_STRIDE(i, n)
    {
        a[i] += g[i];
        if (last) {
            g[i] = a[i];
            a[i] = 0.0f;
        }
    }
}

extern "C" void optim_accumulate_cuda(float *a, float *g, size_t n, int last)
{
    if (n == 0)
        return;
    accumulate_kernel<<<blocks_for(n), OPT_THREADS, 0, stream()>>>(a, g, n, last);
    CUDA_CHECK_LAUNCH(stream());
}

/* Exponent all ones: Inf or NaN (diverge.c's integer test). */
__global__ void scale_kernel(float *__restrict__ x, size_t n, float f)
{
    GRID_STRIDE(i, n) { x[i] *= f; }
}

extern "C" void optim_scale_cuda(float *x, size_t n, float f)
{
    if (n == 0)
        return;
    cudaStream_t s = stream();
    scale_kernel<<<blocks_for(n), OPT_THREADS, 0, s>>>(x, n, f);
    CUDA_CHECK_LAUNCH(s);
}

__global__ void non_finite_kernel(const float *__restrict__ x, size_t n,
                                  unsigned long long *__restrict__ out /* count, first */)
{
    unsigned long long bad = 0, first = (unsigned long long)n;
    GRID_STRIDE(i, n)
    {
        const uint32_t u = __float_as_uint(x[i]);
        if ((u & 0x7f800000u) == 0x7f800000u) {
            bad++;
            first = i < first ? i : first;
        }
    }
    if (bad) {
        atomicAdd(&out[0], bad);
        atomicMin(&out[1], first);
    }
}

/* The two counters live in the context's scratch, as a twin's small results do: no buffer of
 * their own that would outlive the context (it was one, never freed). */
extern "C" size_t optim_non_finite_cuda(const float *x, size_t n, size_t *first)
{
    cudaStream_t s = stream();
    unsigned long long *dev = (unsigned long long *)params_cuda_scratch(2 * sizeof *dev);
    const unsigned long long init[2] = {0, (unsigned long long)n};
    unsigned long long host[2];
    CUDA_CHECK(cudaMemcpyAsync(dev, init, sizeof init, cudaMemcpyHostToDevice, s));
    if (n > 0) {
        non_finite_kernel<<<blocks_for(n), OPT_THREADS, 0, s>>>(x, n, dev);
        CUDA_CHECK_LAUNCH(s);
    }
    CUDA_CHECK(cudaMemcpyAsync(host, dev, sizeof host, cudaMemcpyDeviceToHost, s));
    params_device_wait(); /* s is its stream; counted among the host's waits */
    *first = (size_t)host[1];
    return (size_t)host[0];
}
