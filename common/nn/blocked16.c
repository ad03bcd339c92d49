/* blocked16.c — NCHW <-> nChw16c (blocked16.h). The layers on nChw16c are in bn_c16.c and
 * pool_c16.c. Public: nchw16c_from_nchw, nchw_from_nchw16c.
 */
#include "nn/blocked16.h"

#include <stddef.h>

#define L BLOCK16

void nchw16c_from_nchw(float *dst, const float *src, int n, int c, int hw)
{
    const size_t HW = (size_t)hw;
    for (size_t pl = 0; pl < (size_t)n * (size_t)(c / L); pl++) /* (image, block) */
        for (size_t i = 0; i < HW; i++)
            for (int l = 0; l < L; l++)
                dst[(pl * HW + i) * L + (size_t)l] = src[(pl * L + (size_t)l) * HW + i];
}

void nchw_from_nchw16c(float *dst, const float *src, int n, int c, int hw)
{
    const size_t HW = (size_t)hw;
    for (size_t pl = 0; pl < (size_t)n * (size_t)(c / L); pl++)
        for (size_t i = 0; i < HW; i++)
            for (int l = 0; l < L; l++)
                dst[(pl * L + (size_t)l) * HW + i] = src[(pl * HW + i) * L + (size_t)l];
}
