/* pool.c — 2x2 max pooling and global average pooling, CPU. See pool.h.
 * Public: maxpool2_forward, maxpool2_backward, gap_forward, gap_backward.
 * Planes (n, c) are split over compute_threads() threads (threads.h); every output element is
 * computed by one thread in the same way, so results do not depend on the thread count. */
#include "nn/pool.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/threads.h"

void maxpool2_forward(float *out, const float *in, const pool_dims *d)
{
    const int H = d->h, W = d->w, Ho = H / 2, Wo = W / 2;
    const long planes = (long)d->n * d->c;
#pragma omp parallel for schedule(static) num_threads(compute_threads())
    for (long pl = 0; pl < planes; pl++) {
        const float *x = in + (size_t)pl * H * W;
        float *y = out + (size_t)pl * Ho * Wo;
        for (int i = 0; i < Ho; i++) {
            const float *r0 = x + (size_t)(2 * i) * W, *r1 = r0 + W;
            for (int j = 0; j < Wo; j++) {
                float m = r0[2 * j];
                if (r0[2 * j + 1] > m)
                    m = r0[2 * j + 1];
                if (r1[2 * j] > m)
                    m = r1[2 * j];
                if (r1[2 * j + 1] > m)
                    m = r1[2 * j + 1];
                y[(size_t)i * Wo + j] = m;
            }
        }
    }
}

/* Backward, branch-free: which element of a window is the first maximum is data, so a branch
 * on it is mispredicted about half the time (maxpool backward was 4-5 % of a wrn-16-1 step).
 * Two windows at a time in 4-float vectors (GCC vector extension: SSE and up), the rest one
 * window at a time with the same selects. The first element of a window (row-major) equal to
 * its maximum gets dx += g; every other element keeps its bits (no += 0). */
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));

static inline v4f load4(const float *p)
{
    v4f v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* dx = sel ? dx + g : dx, lane by lane (sel: all-ones or zero per lane). */
static inline void add_where(float *dx, v4i sel, v4f g)
{
    const v4f old = load4(dx);
    const v4i v = (sel & (v4i)(old + g)) | (~sel & (v4i)old);
    memcpy(dx, &v, sizeof v);
}

/* Windows j0, j0+1 of rows x0/x1 (their maxima m[0..1], gradients g[0..1]). */
static inline void windows2(float *d0, float *d1, const float *x0, const float *x1,
                            const float *m, const float *g)
{
    const v4f mm = {m[0], m[0], m[1], m[1]}, gg = {g[0], g[0], g[1], g[1]};
    const v4i odd = {0, -1, 0, -1};
    const v4i a = load4(x0) == mm, b = load4(x1) == mm;
    const v4i a_left = __builtin_shufflevector(a, a, 0, 0, 2, 2); /* the window's first */
    const v4i a_any = a_left | __builtin_shufflevector(a, a, 1, 1, 3, 3);
    const v4i b_left = __builtin_shufflevector(b, b, 0, 0, 2, 2);
    add_where(d0, a & ~(a_left & odd), gg);
    add_where(d1, b & ~a_any & ~(b_left & odd), gg);
}

void maxpool2_backward(float *din, const float *dout, const float *in, const float *out,
                       const pool_dims *d)
{
    const int H = d->h, W = d->w, Ho = H / 2, Wo = W / 2;
    const long planes = (long)d->n * d->c;
#pragma omp parallel for schedule(static) num_threads(compute_threads())
    for (long pl = 0; pl < planes; pl++) {
        const float *x = in + (size_t)pl * H * W;
        float *dx = din + (size_t)pl * H * W;
        const float *y = out + (size_t)pl * Ho * Wo, *dy = dout + (size_t)pl * Ho * Wo;
        for (int i = 0; i < Ho; i++) {
            const float *x0 = x + (size_t)(2 * i) * W, *x1 = x0 + W;
            float *d0 = dx + (size_t)(2 * i) * W, *d1 = d0 + W;
            const float *yr = y + (size_t)i * Wo, *gr = dy + (size_t)i * Wo;
            int j = 0;
            for (; j + 2 <= Wo; j += 2)
                windows2(d0 + 2 * j, d1 + 2 * j, x0 + 2 * j, x1 + 2 * j, yr + j, gr + j);
            for (; j < Wo; j++) {
                const float m = yr[j], g = gr[j];
                const int e0 = x0[2 * j] == m, t1 = x0[2 * j + 1] == m;
                const int t2 = x1[2 * j] == m, t3 = x1[2 * j + 1] == m;
                const int e1 = t1 & !e0, e2 = t2 & !(e0 | t1), e3 = t3 & !(e0 | t1 | t2);
                d0[2 * j] = e0 ? d0[2 * j] + g : d0[2 * j];
                d0[2 * j + 1] = e1 ? d0[2 * j + 1] + g : d0[2 * j + 1];
                d1[2 * j] = e2 ? d1[2 * j] + g : d1[2 * j];
                d1[2 * j + 1] = e3 ? d1[2 * j + 1] + g : d1[2 * j + 1];
            }
        }
    }
}

void gap_forward(float *out, const float *in, const pool_dims *d)
{
    const size_t HW = (size_t)d->h * d->w;
    const long planes = (long)d->n * d->c;
#pragma omp parallel for schedule(static) num_threads(compute_threads())
    for (long pl = 0; pl < planes; pl++) {
        const float *x = in + (size_t)pl * HW;
        float s = 0.0f;
        for (size_t i = 0; i < HW; i++)
            s += x[i];
        out[pl] = s / (float)HW;
    }
}

void gap_backward(float *din, const float *dout, const pool_dims *d)
{
    const size_t HW = (size_t)d->h * d->w;
    const long planes = (long)d->n * d->c;
#pragma omp parallel for schedule(static) num_threads(compute_threads())
    for (long pl = 0; pl < planes; pl++) {
        const float g = dout[pl] / (float)HW;
        float *dx = din + (size_t)pl * HW;
        for (size_t i = 0; i < HW; i++)
            dx[i] += g;
    }
}
