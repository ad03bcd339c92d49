/* fusion_cuda.cu — fp16 casts for device tensors. See fusion_cuda.h.
 * Public: fusion_cuda_to_half, fusion_cuda_from_half. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "base/cuda_check.h"
extern "C" {
#include "base/half.h"
#include "coll/fusion_cuda.h"
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
