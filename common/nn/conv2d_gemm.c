/* conv2d_gemm.c — 2-D convolution (stride 1, "same" padding k/2, with bias) on the CPU, NCHW,
 * as im2col + OpenBLAS GEMM: the readable reference backend of conv2d.h.
 *
 * Public: conv2d_gemm_work_floats, conv2d_gemm_forward, conv2d_gemm_backward (conv2d.h).
 *
 * Method: per image, the input is unrolled (im2col) a few output rows at a time into a column
 * matrix col (Cin·k·k, P) with P = rows·W positions, small enough to stay in cache, and the
 * convolution of those rows is one OpenBLAS GEMM with the weights seen as (Cout, Cin·k·k):
 *   forward   out[:, rows]  = W · col (+ bias)
 *   backward  dW           += dout[:, rows] · colᵀ
 *             dcol          = Wᵀ · dout[:, rows], then col2im adds dcol back into din.
 * A 1x1 convolution needs no unrolling: the image (Cin, H·W) is the column matrix itself.
 */
#include "nn/conv2d.h"

#include <cblas.h>
#include <string.h>

/* An im2col chunk holds at most this many floats (1 MiB), so it stays in the core's L2 cache
 * (1 MiB on Zen 4) while sgemm packs it, yet spans enough positions for an efficient GEMM. */
#define CHUNK_FLOATS ((size_t)1 << 18)

/* Output rows per im2col chunk. */
static int chunk_rows(const conv2d_dims *d)
{
    size_t per_row = (size_t)d->cin * (size_t)(d->k * d->k) * (size_t)d->w;
    size_t r = per_row ? CHUNK_FLOATS / per_row : 1;
    if (r < 1)
        r = 1;
    if (r > (size_t)d->h)
        r = (size_t)d->h;
    return (int)r;
}

size_t conv2d_gemm_work_floats(const conv2d_dims *d)
{
    if (d->k == 1)
        return 0;
    return (size_t)d->cin * (size_t)(d->k * d->k) * (size_t)chunk_rows(d) * (size_t)d->w;
}

/* Columns x of a row whose source x+dx lies inside [0, W): [*xa, *xb). */
static void valid_span(int W, int dx, int *xa, int *xb)
{
    *xa = dx < 0 ? -dx : 0;
    *xb = dx > 0 ? W - dx : W;
    if (*xb < *xa)
        *xb = *xa;
}

/* col (Cin·k·k, (y1-y0)·W) <- the receptive fields of output rows [y0, y1) of one image. */
static void im2col(float *col, const float *img /* (Cin, H, W) */, const conv2d_dims *d, int y0,
                   int y1)
{
    const int H = d->h, W = d->w, k = d->k, pad = k / 2;
    const size_t P = (size_t)(y1 - y0) * (size_t)W;
    float *dst = col;
    for (int c = 0; c < d->cin; c++) {
        const float *src = img + (size_t)c * H * W;
        for (int ky = 0; ky < k; ky++) {
            for (int kx = 0; kx < k; kx++, dst += P) {
                const int dy = ky - pad, dx = kx - pad;
                int xa, xb;
                valid_span(W, dx, &xa, &xb);
                for (int y = y0; y < y1; y++) {
                    float *row = dst + (size_t)(y - y0) * W;
                    const int iy = y + dy;
                    if (iy < 0 || iy >= H) {
                        memset(row, 0, (size_t)W * sizeof *row);
                        continue;
                    }
                    const float *s = src + (size_t)iy * W + dx;
                    for (int x = 0; x < xa; x++)
                        row[x] = 0.0f;
                    memcpy(row + xa, s + xa, (size_t)(xb - xa) * sizeof *row);
                    for (int x = xb; x < W; x++)
                        row[x] = 0.0f;
                }
            }
        }
    }
}

/* img (Cin, H, W) += the column matrix of rows [y0, y1) folded back (inverse of im2col). */
static void col2im_add(float *img, const float *col, const conv2d_dims *d, int y0, int y1)
{
    const int H = d->h, W = d->w, k = d->k, pad = k / 2;
    const size_t P = (size_t)(y1 - y0) * (size_t)W;
    const float *src = col;
    for (int c = 0; c < d->cin; c++) {
        float *dstc = img + (size_t)c * H * W;
        for (int ky = 0; ky < k; ky++) {
            for (int kx = 0; kx < k; kx++, src += P) {
                const int dy = ky - pad, dx = kx - pad;
                int xa, xb;
                valid_span(W, dx, &xa, &xb);
                for (int y = y0; y < y1; y++) {
                    const int iy = y + dy;
                    if (iy < 0 || iy >= H)
                        continue;
                    const float *row = src + (size_t)(y - y0) * W;
                    float *t = dstc + (size_t)iy * W + dx;
                    for (int x = xa; x < xb; x++)
                        t[x] += row[x];
                }
            }
        }
    }
}

/* out rows [y0, y1) of every channel <- bias (or 0), ready for a beta = 1 GEMM. */
static void fill_bias(float *out_img, const float *b, const conv2d_dims *d, int y0, int y1)
{
    const size_t HW = (size_t)d->h * d->w, P = (size_t)(y1 - y0) * d->w;
    for (int c = 0; c < d->cout; c++) {
        float *o = out_img + (size_t)c * HW + (size_t)y0 * d->w;
        const float v = b ? b[c] : 0.0f;
        for (size_t p = 0; p < P; p++)
            o[p] = v;
    }
}

void conv2d_gemm_forward(float *out, const float *in, const float *w, const float *b,
                         const conv2d_dims *d, float *work)
{
    const int HW = d->h * d->w, K = d->cin * d->k * d->k;
    const int R = chunk_rows(d);
    for (int n = 0; n < d->n; n++) {
        const float *x = in + (size_t)n * d->cin * HW;
        float *o = out + (size_t)n * d->cout * HW;
        if (d->k == 1) {
            fill_bias(o, b, d, 0, d->h);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d->cout, HW, d->cin, 1.0f, w,
                        d->cin, x, HW, 1.0f, o, HW);
            continue;
        }
        for (int y0 = 0; y0 < d->h; y0 += R) {
            const int y1 = y0 + R < d->h ? y0 + R : d->h, P = (y1 - y0) * d->w;
            im2col(work, x, d, y0, y1);
            fill_bias(o, b, d, y0, y1);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d->cout, P, K, 1.0f, w, K,
                        work, P, 1.0f, o + (size_t)y0 * d->w, HW);
        }
    }
}

void conv2d_gemm_backward(float *din, float *dw, float *db, const float *dout,
                          const float *in, const float *w, const conv2d_dims *d, float *work)
{
    const int HW = d->h * d->w, K = d->cin * d->k * d->k;
    const int R = chunk_rows(d);
    for (int n = 0; n < d->n; n++) {
        const float *x = in + (size_t)n * d->cin * HW;
        const float *g = dout + (size_t)n * d->cout * HW;
        float *dx = din ? din + (size_t)n * d->cin * HW : NULL;
        if (db) {
            for (int c = 0; c < d->cout; c++) {
                const float *gc = g + (size_t)c * HW;
                float s = 0.0f;
                for (int p = 0; p < HW; p++)
                    s += gc[p];
                db[c] += s;
            }
        }
        if (d->k == 1) {
            if (dw) /* dW (Cout, Cin) += dout (Cout, HW) · inᵀ (HW, Cin) */
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d->cout, d->cin, HW, 1.0f, g,
                            HW, x, HW, 1.0f, dw, d->cin);
            if (dx) /* din (Cin, HW) += Wᵀ (Cin, Cout) · dout (Cout, HW) */
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d->cin, HW, d->cout, 1.0f, w,
                            d->cin, g, HW, 1.0f, dx, HW);
            continue;
        }
        for (int y0 = 0; y0 < d->h; y0 += R) {
            const int y1 = y0 + R < d->h ? y0 + R : d->h, P = (y1 - y0) * d->w;
            const float *gr = g + (size_t)y0 * d->w;
            if (dw) { /* dW (Cout, K) += dout rows (Cout, P) · colᵀ (P, K) */
                im2col(work, x, d, y0, y1);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d->cout, K, P, 1.0f, gr, HW,
                            work, P, 1.0f, dw, K);
            }
            if (dx) { /* dcol (K, P) = Wᵀ (K, Cout) · dout rows (Cout, P); fold into din */
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, P, d->cout, 1.0f, w, K, gr,
                            HW, 0.0f, work, P);
                col2im_add(dx, work, d, y0, y1);
            }
        }
    }
}
