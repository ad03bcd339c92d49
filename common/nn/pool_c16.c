/* pool_c16.c — 2x2 max-pool and global average pool on nChw16c activations. See blocked16.h.
 * Public: maxpool2_forward_c16, maxpool2_backward_c16, gap_forward_c16, gap_backward_c16.
 *
 * The same comparisons and sums as pool.c, lane by lane (a lane is a channel): the same bits.
 * Planes (image, channel block) are split over compute_threads() threads.
 */
#include "nn/blocked16.h"

#include <stddef.h>

#include "base/threads.h"

#define L BLOCK16

/* AVX-512 and AVX2 clones beside the baseline (as bn.c). */
#define HOT __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))

/* pool.c's comparisons, lane by lane: the first of equal maxima in row-major order. */
HOT void maxpool2_forward_c16(float *out, const float *in, const pool_dims *d)
{
    const int H = d->h, W = d->w, Ho = H / 2, Wo = W / 2;
    const long planes = (long)d->n * (d->c / L);
#pragma omp parallel for schedule(static) num_threads(compute_threads())
    for (long pl = 0; pl < planes; pl++) {
        const float *x = in + (size_t)pl * H * W * L;
        float *y = out + (size_t)pl * Ho * Wo * L;
        for (int i = 0; i < Ho; i++)
            for (int j = 0; j < Wo; j++) {
                const float *a = x + ((size_t)(2 * i) * W + 2 * j) * L, *b = a + L,
                            *c = a + (size_t)W * L, *e = c + L;
                float *o = y + ((size_t)i * Wo + j) * L;
#pragma omp simd
                for (int l = 0; l < L; l++) {
                    float m = a[l];
                    m = b[l] > m ? b[l] : m;
                    m = c[l] > m ? c[l] : m;
                    m = e[l] > m ? e[l] : m;
                    o[l] = m;
                }
            }
    }
}

/* din += dout at the window's first element equal to its maximum, selects not branches
 * (pool.c's maxpool2_backward); the other elements keep their bits. */
HOT void maxpool2_backward_c16(float *din, const float *dout, const float *in, const float *out,
                               const pool_dims *d)
{
    const int H = d->h, W = d->w, Ho = H / 2, Wo = W / 2;
    const long planes = (long)d->n * (d->c / L);
#pragma omp parallel for schedule(static) num_threads(compute_threads())
    for (long pl = 0; pl < planes; pl++) {
        const float *x = in + (size_t)pl * H * W * L;
        float *dx = din + (size_t)pl * H * W * L;
        const float *y = out + (size_t)pl * Ho * Wo * L, *dy = dout + (size_t)pl * Ho * Wo * L;
        for (int i = 0; i < Ho; i++)
            for (int j = 0; j < Wo; j++) {
                const size_t o0 = ((size_t)(2 * i) * W + 2 * j) * L, o1 = o0 + L,
                             o2 = o0 + (size_t)W * L, o3 = o2 + L;
                const float *m = y + ((size_t)i * Wo + j) * L, *g = dy + ((size_t)i * Wo + j) * L;
#pragma omp simd
                for (int l = 0; l < L; l++) {
                    const int e0 = x[o0 + l] == m[l], t1 = x[o1 + l] == m[l];
                    const int t2 = x[o2 + l] == m[l], t3 = x[o3 + l] == m[l];
                    const int e1 = t1 & !e0, e2 = t2 & !(e0 | t1), e3 = t3 & !(e0 | t1 | t2);
                    dx[o0 + l] = e0 ? dx[o0 + l] + g[l] : dx[o0 + l];
                    dx[o1 + l] = e1 ? dx[o1 + l] + g[l] : dx[o1 + l];
                    dx[o2 + l] = e2 ? dx[o2 + l] + g[l] : dx[o2 + l];
                    dx[o3 + l] = e3 ? dx[o3 + l] + g[l] : dx[o3 + l];
                }
            }
    }
}

/* Each channel's pixels summed in pool.c's order (pixel 0 first), one lane per channel. */
void gap_forward_c16(float *out, const float *in, const pool_dims *d)
{
    const size_t HW = (size_t)d->h * d->w;
    const int CB = d->c / L;
    const long planes = (long)d->n * CB;
#pragma omp parallel for schedule(static) num_threads(compute_threads())
    for (long pl = 0; pl < planes; pl++) {
        const float *x = in + (size_t)pl * HW * L;
        float s[L] = {0};
        for (size_t i = 0; i < HW; i++)
#pragma omp simd
            for (int l = 0; l < L; l++)
                s[l] += x[i * L + l];
        /* plane pl = (n, cb): channels n·C + cb·16 + l of the plain (N, C) output */
        for (int l = 0; l < L; l++)
            out[(size_t)pl * L + (size_t)l] = s[l] / (float)HW;
    }
}

void gap_backward_c16(float *din, const float *dout, const pool_dims *d)
{
    const size_t HW = (size_t)d->h * d->w;
    const long planes = (long)d->n * (d->c / L);
#pragma omp parallel for schedule(static) num_threads(compute_threads())
    for (long pl = 0; pl < planes; pl++) {
        float g[L];
        for (int l = 0; l < L; l++)
            g[l] = dout[(size_t)pl * L + (size_t)l] / (float)HW;
        float *dx = din + (size_t)pl * HW * L;
        for (size_t i = 0; i < HW; i++)
#pragma omp simd
            for (int l = 0; l < L; l++)
                dx[i * L + l] += g[l];
    }
}
