/* fusion_cuda.cu — fp16 casts for device tensors and the ranks' sum. See fusion_cuda.h.
 * Public: fusion_cuda_to_half, fusion_cuda_from_half, fusion_cuda_sum_ranks. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "base/cuda_check.h"
extern "C" {
#include "base/half.h"
#include "coll_gpu/fusion_cuda.h"
#include "coll_gpu/sum_ranks.h"
}

#define THREADS 256
#define MAX_BLOCKS 4096 /* grid-stride loops cover the rest */

static unsigned blocks_for(size_t n)
{
    size_t b = (n + THREADS - 1) / THREADS;
    return (unsigned)(b < MAX_BLOCKS ? b : MAX_BLOCKS);
}

__global__ static void to_half_kernel(const float *src, uint16_t *dst, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = half_from_float(src[i]);
}

__global__ static void from_half_kernel(const uint16_t *src, float *dst, size_t n, float scale)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = half_to_float(src[i]);
        dst[i] = scale == 1.0f ? v : half_to_float(half_from_float(v * scale));
    }
}

extern "C" void fusion_cuda_to_half(const float *src, uint16_t *dst, size_t n, cudaStream_t s)
{
    if (n == 0)
        return;
    to_half_kernel<<<blocks_for(n), THREADS, 0, s>>>(src, dst, n);
    CUDA_CHECK(cudaGetLastError());
}

extern "C" void fusion_cuda_from_half(const uint16_t *src, float *dst, size_t n, float scale,
                                      cudaStream_t s)
{
    if (n == 0)
        return;
    from_half_kernel<<<blocks_for(n), THREADS, 0, s>>>(src, dst, n, scale);
    CUDA_CHECK(cudaGetLastError());
}

/* The ranks' pieces, by value in the kernel's parameters: no copy of the table to the GPU. */
typedef struct {
    const void *p[FUSION_CUDA_MAX_RANKS];
} rank_ptrs;

/* One thread per element (grid-stride): sum_ranks.h, the arithmetic the CPU test checks. */
__global__ static void sum_ranks_f32_kernel(float *buf, rank_ptrs x, int L, size_t n, float scale)
{
    size_t step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        buf[i] = sum_ranks_f32((const float *const *)x.p, L, i, scale);
}

__global__ static void sum_ranks_f16_kernel(uint16_t *buf, rank_ptrs x, int L, size_t n,
                                            float scale)
{
    size_t step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        buf[i] = sum_ranks_f16((const uint16_t *const *)x.p, L, i, scale);
}

extern "C" void fusion_cuda_sum_ranks(void *buf, const void *const *x, int L, size_t n, int fp16,
                                      float scale, cudaStream_t s)
{
    if (n == 0)
        return;
    if (L < 1 || L > FUSION_CUDA_MAX_RANKS)
        fatal_error("fusion_cuda_sum_ranks: %d ranks (1 to %d)", L, FUSION_CUDA_MAX_RANKS);
    rank_ptrs t = {{NULL}};
    for (int r = 0; r < L; r++)
        t.p[r] = x[r];
    if (fp16)
        sum_ranks_f16_kernel<<<blocks_for(n), THREADS, 0, s>>>((uint16_t *)buf, t, L, n, scale);
    else
        sum_ranks_f32_kernel<<<blocks_for(n), THREADS, 0, s>>>((float *)buf, t, L, n, scale);
    CUDA_CHECK(cudaGetLastError());
}
