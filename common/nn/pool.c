/* pool.c — 2x2 max pooling and global average pooling, CPU. See pool.h.
 * Public: maxpool2_forward, maxpool2_backward, gap_forward, gap_backward.
 * Planes (n, c) are split over compute_threads() threads (threads.h); every output element is
 * computed by one thread in the same way, so results do not depend on the thread count. */
#include "nn/pool.h"

#include <stddef.h>

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
            for (int j = 0; j < Wo; j++) {
                const float m = y[(size_t)i * Wo + j], g = dy[(size_t)i * Wo + j];
                const size_t p0 = (size_t)(2 * i) * W + 2 * j;
                const size_t win[4] = {p0, p0 + 1, p0 + W, p0 + W + 1};
                for (int t = 0; t < 4; t++) {
                    if (x[win[t]] == m) {
                        dx[win[t]] += g;
                        break;
                    }
                }
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
