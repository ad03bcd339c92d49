/* ref_double.h — straightforward double-precision forward passes of the layers and of a whole
 * WideResNet, written independently of common/ (direct loops, no im2col, no BLAS), for the
 * gradient checks in test_layers.c and test_wrn.c, and a central-difference checker.
 *
 * Only the dropout mask is shared with the kit (lm_dropout_scale): which elements are dropped is
 * a convention, not something a gradient check can verify; test_layers checks the mask itself.
 */
#ifndef HVDLAB_REF_DOUBLE_H
#define HVDLAB_REF_DOUBLE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/layer_math.h"

/* out (N,Cout,H,W) = conv(in (N,Cin,H,W), w (Cout,Cin,k,k)) + b, stride 1, zero padding k/2. */
static inline void ref_conv(double *out, const double *in, const double *w, const double *b,
                            int N, int Cin, int Cout, int H, int W, int k)
{
    const int pad = k / 2;
    for (int n = 0; n < N; n++)
        for (int co = 0; co < Cout; co++) {
            double *o = out + ((size_t)n * Cout + co) * H * W;
            for (int p = 0; p < H * W; p++)
                o[p] = b ? b[co] : 0.0;
            for (int ci = 0; ci < Cin; ci++) {
                const double *x = in + ((size_t)n * Cin + ci) * H * W;
                for (int ky = 0; ky < k; ky++)
                    for (int kx = 0; kx < k; kx++) {
                        const double wv = w[(((size_t)co * Cin + ci) * k + ky) * k + kx];
                        const int dy = ky - pad, dx = kx - pad;
                        const int xa = dx < 0 ? -dx : 0, xb = dx > 0 ? W - dx : W;
                        for (int y = 0; y < H; y++) {
                            const int iy = y + dy;
                            if (iy < 0 || iy >= H)
                                continue;
                            double *orow = o + y * W;
                            const double *xrow = x + iy * W + dx;
                            for (int xx = xa; xx < xb; xx++) /* output columns with ix inside */
                                orow[xx] += wv * xrow[xx];
                        }
                    }
            }
        }
}

/* Gradients of a convolution in double, directly from the definition (the adjoint of ref_conv):
 * din, dw, db += (any may be NULL). */
static inline void ref_conv_backward(double *din, double *dw, double *db, const double *dout,
                                     const double *in, const double *w, int N, int Cin, int Cout,
                                     int H, int W, int k)
{
    const int pad = k / 2;
    for (int n = 0; n < N; n++)
        for (int co = 0; co < Cout; co++) {
            const double *g = dout + ((size_t)n * Cout + co) * H * W;
            if (db)
                for (int p = 0; p < H * W; p++)
                    db[co] += g[p];
            for (int ci = 0; ci < Cin; ci++) {
                const double *x = in + ((size_t)n * Cin + ci) * H * W;
                double *dx = din ? din + ((size_t)n * Cin + ci) * H * W : NULL;
                for (int ky = 0; ky < k; ky++)
                    for (int kx = 0; kx < k; kx++) {
                        const size_t wi = (((size_t)co * Cin + ci) * k + ky) * k + kx;
                        double acc = 0;
                        for (int y = 0; y < H; y++)
                            for (int xx = 0; xx < W; xx++) {
                                const int iy = y + ky - pad, ix = xx + kx - pad;
                                if (iy < 0 || iy >= H || ix < 0 || ix >= W)
                                    continue;
                                acc += g[y * W + xx] * x[iy * W + ix];
                                if (dx)
                                    dx[iy * W + ix] += g[y * W + xx] * w[wi];
                            }
                        if (dw)
                            dw[wi] += acc;
                    }
            }
        }
}

/* Training-mode batch norm with biased batch variance; mean/var (C) out may be NULL. */
static inline void ref_bn(double *out, const double *in, const double *gamma, const double *beta,
                          int N, int C, int HW, double eps, double *mean_out, double *var_out)
{
    const double M = (double)N * HW;
    for (int c = 0; c < C; c++) {
        double s = 0, ss = 0;
        for (int n = 0; n < N; n++)
            for (int i = 0; i < HW; i++)
                s += in[((size_t)n * C + c) * HW + i];
        const double mu = s / M;
        for (int n = 0; n < N; n++)
            for (int i = 0; i < HW; i++) {
                const double t = in[((size_t)n * C + c) * HW + i] - mu;
                ss += t * t;
            }
        const double var = ss / M, is = 1.0 / sqrt(var + eps);
        if (mean_out)
            mean_out[c] = mu;
        if (var_out)
            var_out[c] = var;
        for (int n = 0; n < N; n++)
            for (int i = 0; i < HW; i++) {
                const size_t j = ((size_t)n * C + c) * HW + i;
                out[j] = gamma[c] * (in[j] - mu) * is + beta[c];
            }
    }
}

static inline void ref_relu(double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = x[i] > 0 ? x[i] : 0;
}

static inline void ref_dropout(double *x, size_t n, double p, uint64_t key)
{
    if (p > 0)
        for (size_t i = 0; i < n; i++)
            x[i] *= lm_dropout_scale(key, i, (float)p);
}

/* 2x2 max-pool, stride 2, floor. */
static inline void ref_maxpool(double *out, const double *in, int N, int C, int H, int W)
{
    const int Ho = H / 2, Wo = W / 2;
    for (int pl = 0; pl < N * C; pl++)
        for (int i = 0; i < Ho; i++)
            for (int j = 0; j < Wo; j++) {
                double m = -INFINITY;
                for (int a = 0; a < 2; a++)
                    for (int b = 0; b < 2; b++) {
                        const double v = in[(size_t)pl * H * W + (2 * i + a) * W + 2 * j + b];
                        m = v > m ? v : m;
                    }
                out[(size_t)pl * Ho * Wo + i * Wo + j] = m;
            }
}

static inline void ref_gap(double *out, const double *in, int N, int C, int HW)
{
    for (int pl = 0; pl < N * C; pl++) {
        double s = 0;
        for (int i = 0; i < HW; i++)
            s += in[(size_t)pl * HW + i];
        out[pl] = s / HW;
    }
}

/* out (N,O) = in (N,I) · wᵀ + b, w (O,I). */
static inline void ref_dense(double *out, const double *in, const double *w, const double *b,
                             int N, int I, int O)
{
    for (int n = 0; n < N; n++)
        for (int o = 0; o < O; o++) {
            double s = b ? b[o] : 0;
            for (int i = 0; i < I; i++)
                s += in[(size_t)n * I + i] * w[(size_t)o * I + i];
            out[(size_t)n * O + o] = s;
        }
}

/* Mean softmax cross-entropy (log-sum-exp with the row maximum taken out). */
static inline double ref_xent(const double *z, const int *y, int N, int K)
{
    double total = 0;
    for (int n = 0; n < N; n++) {
        const double *r = z + (size_t)n * K;
        double m = r[0], s = 0;
        for (int k = 1; k < K; k++)
            m = r[k] > m ? r[k] : m;
        for (int k = 0; k < K; k++)
            s += exp(r[k] - m);
        total += m + log(s) - r[y[n]];
    }
    return total / N;
}

static inline double *ref_from_float(const float *f, size_t n)
{
    double *d = malloc((n ? n : 1) * sizeof *d);
    for (size_t i = 0; i < n; i++)
        d[i] = f[i];
    return d;
}

/* ---- central differences ---------------------------------------------------------------- */

typedef double (*ref_loss_fn)(void *ctx); /* the loss in double from ctx's double arrays */

/* One variable: x is the double copy the loss reads, grad the kit's float gradient of the same
 * loss (minus `prefill`, the value the gradient buffer held before the kit's backward added to
 * it, which checks that backward accumulates). */
typedef struct {
    const char *name;
    double *x;
    const float *grad;
    size_t n;
    float prefill;
} ref_var;

typedef struct {
    double worst;   /* largest |num − kit| / scale over the checked entries */
    double max_abs; /* largest |numerical gradient| seen (0 means the check tested nothing) */
    size_t checked;
    char msg[256];  /* first failure, empty when none */
} ref_check;

/* For each variable, up to `per_var` entries (all when n <= per_var, otherwise first, last and
 * evenly spread ones): numerical dL/dx_i = (L(x+h) − L(x−h)) / 2h in double, compared with the
 * kit's gradient. Tolerance: |num − kit| <= rtol·scale, scale = the largest |num| of that
 * variable but at least `floor`: errors relative to the gradient's magnitude, with the floor for
 * variables whose exact gradient is zero (a conv bias followed by batch norm), where float
 * rounding is all the kit can show. */
static inline ref_check ref_gradcheck(ref_loss_fn f, void *ctx, const ref_var *vars, int nvars,
                                      size_t per_var, double h, double rtol, double floor)
{
    ref_check r = {0};
    for (int v = 0; v < nvars; v++) {
        const ref_var *rv = &vars[v];
        const size_t count = rv->n <= per_var ? rv->n : per_var;
        double *num = malloc((count ? count : 1) * sizeof *num);
        size_t *idx = malloc((count ? count : 1) * sizeof *idx);
        double scale = floor > 1e-30 ? floor : 1e-30, raw = 0;
        for (size_t t = 0; t < count; t++) {
            idx[t] = rv->n <= per_var ? t : (count > 1 ? t * (rv->n - 1) / (count - 1) : 0);
            const size_t i = idx[t];
            const double keep = rv->x[i];
            rv->x[i] = keep + h;
            const double lp = f(ctx);
            rv->x[i] = keep - h;
            const double lm = f(ctx);
            rv->x[i] = keep;
            num[t] = (lp - lm) / (2 * h);
            if (fabs(num[t]) > raw)
                raw = fabs(num[t]);
        }
        if (raw > scale)
            scale = raw;
        if (raw > r.max_abs)
            r.max_abs = raw;
        for (size_t t = 0; t < count; t++) {
            const double kit = (double)rv->grad[idx[t]] - rv->prefill;
            const double e = fabs(num[t] - kit) / scale;
            if (e > r.worst)
                r.worst = e;
            if (e > rtol && !r.msg[0])
                snprintf(r.msg, sizeof r.msg, "%s[%zu]: numerical %.9g, kit %.9g (error %.3g of "
                         "max |grad| %.3g > %.1g)", rv->name, idx[t], num[t], kit, e, scale, rtol);
        }
        r.checked += count;
        free(num);
        free(idx);
    }
    return r;
}

#endif
