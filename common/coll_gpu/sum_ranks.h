/* sum_ranks.h — one element of the host's ranks' sum for the GPU-summed staged path (node_stage.h),
 * compiled for the GPU (fusion_cuda.cu's kernel) and the CPU (tests/mpi/test_node_stage.c), so
 * the CPU test, which compares it with shm_allreduce's bits, covers the GPU's arithmetic too.
 *
 * x[r] is rank r's piece (this rank's own buffer among them). The ring's kernels' order and
 * rounding (ring.h): acc = x[0][i], then acc = (acc + x[r][i]) for r = 1 .. L-1 with the last
 * addition multiplied by scale (f16: every addition in float, rounded back to half); one rank:
 * x[0][i] * scale. On the GPU __fadd_rn / __fmul_rn: never contracted, whatever the flags.
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

static inline HVD_HOST_DEVICE float sum_ranks_f32(const float *const *x, int L, size_t i,
                                                  float scale)
{
    float acc = x[0][i];
    if (L == 1 && scale != 1.0f)
        acc = SUM_RANKS_MUL(acc, scale);
    for (int r = 1; r < L; r++) {
        acc = SUM_RANKS_ADD(acc, x[r][i]);
        if (r == L - 1 && scale != 1.0f)
            acc = SUM_RANKS_MUL(acc, scale);
    }
    return acc;
}

static inline HVD_HOST_DEVICE uint16_t sum_ranks_f16(const uint16_t *const *x, int L, size_t i,
                                                     float scale)
{
    uint16_t acc = x[0][i];
    if (L == 1 && scale != 1.0f)
        acc = half_from_float(SUM_RANKS_MUL(half_to_float(acc), scale));
    for (int r = 1; r < L; r++) {
        float sum = SUM_RANKS_ADD(half_to_float(acc), half_to_float(x[r][i]));
        acc = half_from_float(SUM_RANKS_MUL(sum, r == L - 1 ? scale : 1.0f));
    }
    return acc;
}

#endif
