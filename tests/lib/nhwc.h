/* nhwc.h — the NHWC layout of an (N, C, HW) float tensor, for the tests and the CPU emulator that
 * give a GPU model NHWC activations (its default) and compare them with the CPU's NCHW ones
 * (test_twins_cuda.c, test_wrn_cuda.c, tests/emu/emu_libs.c).
 * Public: nhwc_offset, nhwc_transpose.
 */
#ifndef HVDLAB_TESTS_NHWC_H
#define HVDLAB_TESTS_NHWC_H

#include <stddef.h>

/* Where the element at NCHW offset i lies in NHWC. */
static inline size_t nhwc_offset(size_t i, size_t C, size_t HW)
{
    return (i / (C * HW) * HW + i % HW) * C + i / HW % C;
}

/* dst = src in the other layout: to_nhwc 1 reads src as NCHW, 0 as NHWC. n = N·C·HW floats;
 * dst and src do not overlap. */
static inline void nhwc_transpose(float *dst, const float *src, size_t n, size_t C, size_t HW,
                                  int to_nhwc)
{
    for (size_t i = 0; i < n; i++) { /* i: the NCHW offset */
        const size_t j = nhwc_offset(i, C, HW);
        if (to_nhwc)
            dst[j] = src[i];
        else
            dst[i] = src[j];
    }
}

#endif
