/* sum_ranks.h — one element of the host's ranks' sum for the GPU-summed staged path (node_stage.h),
 * compiled for the GPU (fusion_cuda.cu's kernel) and the CPU (tests/mpi/test_node_stage.c), so
 * the CPU test, which compares it with shm_allreduce's bits, covers the GPU's arithmetic too.
 *
 * x_r is buf[i] for r == me, else others[r * stride + i]. The ring's kernels' order and
 * rounding (ring.h): acc = x_0, then acc = (acc + x_r) for r = 1 .. L-1 with the last addition
 * multiplied by scale (f16: every addition in float, rounded back to half); one rank: x_0 * scale.
 * On the GPU __fadd_rn / __fmul_rn: never contracted, whatever the flags.
 */
#ifndef HVDLAB_SUM_RANKS_H
#define HVDLAB_SUM_RANKS_H

#include <stddef.h>
#include <stdint.h>

#include "base/half.h"

#ifdef __CUDA_ARCH__
#define SUM_RANKS_ADD(a, b) __fadd_rn(a, b)
#define SUM_RANKS_MUL(a, b) __fmul_rn(a, b)
#else
#define SUM_RANKS_ADD(a, b) ((a) + (b))
#define SUM_RANKS_MUL(a, b) ((a) * (b))
#endif

static inline HVD_HOST_DEVICE float sum_ranks_f32(const float *buf, const float *others,
                                                  size_t stride, int me, int L, size_t i,
                                                  float scale)
{
    float acc = me == 0 ? buf[i] : others[i];
    if (L == 1 && scale != 1.0f)
        acc = SUM_RANKS_MUL(acc, scale);
    for (int r = 1; r < L; r++) {
        acc = SUM_RANKS_ADD(acc, r == me ? buf[i] : others[(size_t)r * stride + i]);
        if (r == L - 1 && scale != 1.0f)
            acc = SUM_RANKS_MUL(acc, scale);
    }
    return acc;
}

static inline HVD_HOST_DEVICE uint16_t sum_ranks_f16(const uint16_t *buf, const uint16_t *others,
                                                     size_t stride, int me, int L, size_t i,
                                                     float scale)
{
    uint16_t acc = me == 0 ? buf[i] : others[i];
    if (L == 1 && scale != 1.0f)
        acc = half_from_float(SUM_RANKS_MUL(half_to_float(acc), scale));
    for (int r = 1; r < L; r++) {
        uint16_t x = r == me ? buf[i] : others[(size_t)r * stride + i];
        float sum = SUM_RANKS_ADD(half_to_float(acc), half_to_float(x));
        acc = half_from_float(SUM_RANKS_MUL(sum, r == L - 1 ? scale : 1.0f));
    }
    return acc;
}

#endif
