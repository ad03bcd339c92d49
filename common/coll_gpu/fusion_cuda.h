/* fusion_cuda.h — the GPU side of tensor fusion: fp16 casts of device tensors, and the sum of
 * the host's ranks' pieces for the GPU-summed host-staged path (node_stage.h), on a stream.
 *
 * The same conversions as the CPU's fp16 compression (base/half.h's helpers, compiled for the
 * device), so a tensor compressed on the GPU travels as the same bits as on the CPU.
 * CUDA builds only.
 */
#ifndef HVDLAB_FUSION_CUDA_H
#define HVDLAB_FUSION_CUDA_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

/* dst[i] = half_from_float(src[i]), device buffers. */
void fusion_cuda_to_half(const float *src, uint16_t *dst, size_t n, cudaStream_t s);
/* dst[i] = half_to_float(src[i]); with scale != 1 the scaled value is rounded to half again,
 * as the CPU ring's average is: half_to_float(half_from_float(half_to_float(src[i]) * scale)). */
void fusion_cuda_from_half(const uint16_t *src, float *dst, size_t n, float scale,
                           cudaStream_t s);

/* The most ranks fusion_cuda_sum_ranks adds: their pointers travel in the kernel's parameters
 * (2 KiB of CUDA's 4 KiB). */
#define FUSION_CUDA_MAX_RANKS 256

/* buf[i] = the sum over ranks r = 0 .. L-1, in that order, of x[r][i] (x: L device pointers,
 * this rank's buf among them; L <= FUSION_CUDA_MAX_RANKS): sum_ranks.h, the ring's arithmetic,
 * so the bits are the CPU's. fp16: the elements are IEEE half in uint16_t. */
void fusion_cuda_sum_ranks(void *buf, const void *const *x, int L, size_t n, int fp16,
                           float scale, cudaStream_t s);

#endif
