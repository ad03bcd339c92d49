/* test_layers.c — every layer's forward against a double-precision reference (ref_double.h) and
 * its backward against central differences of that reference, plus the params helpers.
 *
 * Method: for a layer y = f(x, θ) the scalar loss is L = Σ r·y with r fixed random weights, so
 * the kit's backward gets dout = r. Inputs, weights and r are random in ranges that tell every
 * position apart. The numerical gradient (L(x+h) − L(x−h))/2h is taken in double on a double
 * copy of the same values, h = 1e-6 for non-linear layers (truncation ~h², rounding ~1e-16/h,
 * both far below float), and h = 1e-2 for layers that are linear in the variable (exact).
 * Tolerances (relative to the largest |gradient| of each variable, see ref_gradcheck):
 *   layers linear in the variable (conv, dense, pools, dropout, ReLU away from 0)  1e-5
 *   batch norm, softmax cross-entropy                                               1e-4
 * The float backward is 1e-8..1.4e-6 off here (the worst seen is printed per check), so the
 * tolerances leave a 10x margin for other BLAS kernels and thread counts. The residual block and
 * the whole network are checked in test_wrn_grad.c.
 * Every check also requires a non-trivial gradient (largest |numerical gradient| > 1e-3) and that
 * backward accumulates (gradient buffers start at PREFILL, not 0).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/ck_mpi.h"
#include "lib/fill.h"
#include "lib/ref_double.h"
#include "model/params.h"
#include "nn/act.h"
#include "nn/bn.h"
#include "nn/conv2d.h"
#include "nn/dense.h"
#include "nn/pool.h"
#include "nn/xent.h"

#define PREFILL 0.015625f /* gradients start here: backward must add to it */
#define H_NONLIN 1e-6
#define H_LIN 1e-2
#define TOL_LIN 1e-5
#define TOL_NONLIN 1e-4

static uint64_t rng = 12345;

static float *randf(size_t n, float lo, float hi) { return rand_floats(&rng, n, lo, hi); }

static float *filled(size_t n, float v) { return const_floats(n, v); }

static double dot(const double *a, const double *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* max |f − d| / max |d| */
static double rel_diff(const float *f, const double *d, size_t n)
{
    double m = 1e-30, e = 0;
    for (size_t i = 0; i < n; i++) {
        m = fmax(m, fabs(d[i]));
        e = fmax(e, fabs(f[i] - d[i]));
    }
    return e / m;
}

static void expect_check(const char *what, ref_check rc, double tol)
{
    printf("  %-34s %5zu entries, worst error %.2e of max |grad| (tolerance %.0e)\n", what,
           rc.checked, rc.worst, tol);
    ck_assert_msg(rc.msg[0] == 0, "%s: %s", what, rc.msg);
    ck_assert_msg(rc.max_abs > 1e-3, "%s: gradient is trivially zero (max %g)", what, rc.max_abs);
}

/* ---- convolution ---------------------------------------------------------------------------- */

typedef struct {
    int N, Cin, Cout, H, W, k;
    double *x, *w, *b, *r, *out;
} conv_ctx;

static double conv_loss(void *p)
{
    conv_ctx *c = p;
    ref_conv(c->out, c->x, c->w, c->b, c->N, c->Cin, c->Cout, c->H, c->W, c->k);
    return dot(c->r, c->out, (size_t)c->N * c->Cout * c->H * c->W);
}

/* Forward vs double everywhere; backward vs the double adjoint everywhere and vs central
 * differences on up to per_var entries of each variable. */
static void check_conv(int N, int Cin, int Cout, int H, int W, int k, size_t per_var)
{
    const conv2d_dims d = {.n = N, .cin = Cin, .h = H, .w = W, .cout = Cout, .k = k};
    const size_t nx = (size_t)N * Cin * H * W, ny = (size_t)N * Cout * H * W;
    const size_t nw = (size_t)Cout * Cin * k * k;
    float *x = randf(nx, -1, 1), *w = randf(nw, -0.5f, 0.5f), *b = randf((size_t)Cout, -1, 1);
    float *r = randf(ny, -1, 1), *y = malloc(ny * sizeof *y);
    float *work = malloc((conv2d_work_floats(&d) + 1) * sizeof *work);
    float *dx = filled(nx, PREFILL), *dw = filled(nw, PREFILL), *db = filled((size_t)Cout, PREFILL);
    conv_ctx c = {N, Cin, Cout, H, W, k, ref_from_float(x, nx), ref_from_float(w, nw),
                  ref_from_float(b, (size_t)Cout), ref_from_float(r, ny), malloc(ny * sizeof(double))};
    conv2d_forward(y, x, w, b, &d, work);
    conv_loss(&c);
    const double fe = rel_diff(y, c.out, ny);
    conv2d_backward(dx, dw, db, r, x, w, &d, work);

    double *rdx = calloc(nx, sizeof *rdx), *rdw = calloc(nw, sizeof *rdw);
    double *rdb = calloc((size_t)Cout, sizeof *rdb);
    ref_conv_backward(rdx, rdw, rdb, c.r, c.x, c.w, N, Cin, Cout, H, W, k);
    for (size_t i = 0; i < nx; i++)
        dx[i] -= PREFILL;
    for (size_t i = 0; i < nw; i++)
        dw[i] -= PREFILL;
    for (int i = 0; i < Cout; i++)
        db[i] -= PREFILL;
    const double ex = rel_diff(dx, rdx, nx), ew = rel_diff(dw, rdw, nw), eb = rel_diff(db, rdb, Cout);
    printf("  conv %dx%d N%d %d->%d %dx%d: forward %.1e, backward din %.1e dw %.1e db %.1e "
           "(all entries vs double adjoint, tolerance 1e-5)\n", k, k, N, Cin, Cout, H, W, fe, ex,
           ew, eb);
    ck_assert_msg(fe < 1e-5 && ex < 1e-5 && ew < 1e-5 && eb < 1e-5, "conv vs double reference");
    for (size_t i = 0; i < nx; i++)
        dx[i] += PREFILL;
    for (size_t i = 0; i < nw; i++)
        dw[i] += PREFILL;
    for (int i = 0; i < Cout; i++)
        db[i] += PREFILL;
    ref_var v[] = {{"in", c.x, dx, nx, PREFILL}, {"w", c.w, dw, nw, PREFILL},
                   {"b", c.b, db, (size_t)Cout, PREFILL}};
    char what[64];
    snprintf(what, sizeof what, "conv %dx%d %d->%d %dx%d", k, k, Cin, Cout, H, W);
    expect_check(what, ref_gradcheck(conv_loss, &c, v, 3, per_var, H_LIN, TOL_LIN, 0), TOL_LIN);

    /* NULL outputs are skipped, the others unchanged by that */
    float *dw2 = filled(nw, 0);
    conv2d_backward(NULL, dw2, NULL, r, x, w, &d, work);
    for (size_t i = 0; i < nw; i++)
        ck_assert_msg(fabsf(dw2[i] - (dw[i] - PREFILL)) <= 1e-6f * (1 + fabsf(dw2[i])),
                      "dw alone differs at %zu", i);
    free(dw2);
    free(x), free(w), free(b), free(r), free(y), free(work), free(dx), free(dw), free(db);
    free(c.x), free(c.w), free(c.b), free(c.r), free(c.out), free(rdx), free(rdw), free(rdb);
}

START_TEST(conv_3x3_small) { check_conv(2, 3, 4, 5, 7, 3, 1000); }
END_TEST
START_TEST(conv_1x1_small) { check_conv(2, 5, 3, 4, 6, 1, 1000); }
END_TEST
START_TEST(conv_1x1_pixel) { check_conv(3, 2, 2, 1, 1, 1, 1000); }
END_TEST
/* 64 channels x 28 columns: im2col splits the 28 rows into chunks (rows 16 + 12), so chunk
 * borders, where a receptive field straddles two chunks, are covered. */
START_TEST(conv_3x3_chunked) { check_conv(2, 64, 8, 28, 28, 3, 12); }
END_TEST
/* A 3x3 kernel on a 1-row, 2-column image: most taps fall in the padding. */
START_TEST(conv_3x3_tiny_image) { check_conv(2, 3, 2, 1, 2, 3, 1000); }
END_TEST

/* ---- batch norm ----------------------------------------------------------------------------- */

typedef struct {
    int N, C, HW;
    double *x, *g, *b, *r, *out;
} bn_ctx;

static double bn_loss(void *p)
{
    bn_ctx *c = p;
    ref_bn(c->out, c->x, c->g, c->b, c->N, c->C, c->HW, BN_EPS, NULL, NULL);
    return dot(c->r, c->out, (size_t)c->N * c->C * c->HW);
}

START_TEST(bn_train_gradcheck)
{
    const int N = 3, C = 4, HW = 15;
    const size_t n = (size_t)N * C * HW;
    const bn_dims d = {.n = N, .c = C, .hw = HW, .eps = BN_EPS, .momentum = BN_MOMENTUM};
    float *x = randf(n, -1, 1), *g = randf(C, 0.5f, 1.5f), *b = randf(C, -0.5f, 0.5f);
    for (size_t i = 0; i < n; i++) { /* channels with different offsets and spreads */
        const int c = (int)(i / HW % C);
        x[i] = x[i] * (float)(c + 1) + 0.7f * (float)c - 1.0f;
    }
    float *r = randf(n, -1, 1), *y = malloc(n * sizeof *y), *mean = malloc(C * sizeof *mean);
    float *istd = malloc(C * sizeof *istd), *rm = randf(C, -0.2f, 0.2f), *rv = randf(C, 0.5f, 2);
    float *rm0 = malloc(C * sizeof *rm0), *rv0 = malloc(C * sizeof *rv0);
    memcpy(rm0, rm, C * sizeof *rm0);
    memcpy(rv0, rv, C * sizeof *rv0);
    float *dx = filled(n, PREFILL), *dg = filled(C, PREFILL), *db = filled(C, PREFILL);
    bn_ctx c = {N, C, HW, ref_from_float(x, n), ref_from_float(g, C), ref_from_float(b, C),
                ref_from_float(r, n), malloc(n * sizeof(double))};
    double mu[4], var[4];
    ref_bn(c.out, c.x, c.g, c.b, N, C, HW, BN_EPS, mu, var);
    bn_forward_train(y, x, g, b, mean, istd, rm, rv, &d);
    const double fe = rel_diff(y, c.out, n);
    printf("  bn train forward vs double: %.1e (tolerance 1e-5)\n", fe);
    ck_assert_msg(fe < 1e-5, "bn train forward off by %.3g (tolerance 1e-5)", fe);
    const double M = (double)N * HW;
    for (int k = 0; k < C; k++) { /* Keras momentum 0.9; running variance from the unbiased one */
        const double want_m = 0.9 * rm0[k] + 0.1 * mu[k];
        const double want_v = 0.9 * rv0[k] + 0.1 * var[k] * M / (M - 1);
        ck_assert_msg(fabs(rm[k] - want_m) < 1e-6 && fabs(rv[k] - want_v) < 1e-5 * want_v,
                      "running stats of channel %d: %g %g, want %g %g", k, rm[k], rv[k], want_m,
                      want_v);
        const double want_is = 1 / sqrt(var[k] + BN_EPS);
        ck_assert_msg(fabs(mean[k] - mu[k]) < 1e-6 && fabs(istd[k] - want_is) < 1e-5,
                      "saved statistics of channel %d: mean %g invstd %g, want %g %g", k, mean[k],
                      istd[k], mu[k], want_is);
    }
    bn_backward(dx, dg, db, r, x, g, mean, istd, &d);
    ref_var v[] = {{"in", c.x, dx, n, PREFILL}, {"gamma", c.g, dg, C, PREFILL},
                   {"beta", c.b, db, C, PREFILL}};
    expect_check("batch norm (training) N3 C4 HW15",
                 ref_gradcheck(bn_loss, &c, v, 3, 1000, H_NONLIN, TOL_NONLIN, 0), TOL_NONLIN);

    /* inference: the running statistics, nothing updated; out may equal in */
    memcpy(rm0, rm, C * sizeof *rm0);
    bn_forward_infer(x, x, g, b, rm, rv, &d);
    for (size_t i = 0; i < n; i++) {
        const int k = (int)(i / HW % C);
        const double want = g[k] * (c.x[i] - rm[k]) / sqrt(rv[k] + BN_EPS) + b[k];
        ck_assert_msg(fabs(x[i] - want) < 1e-5 * (1 + fabs(want)), "inference %zu", i);
    }
    for (int k = 0; k < C; k++)
        ck_assert_msg(rm[k] == rm0[k], "inference changed running mean %d: %g -> %g", k, rm0[k],
                      rm[k]);
    free(x), free(g), free(b), free(r), free(y), free(mean), free(istd), free(rm), free(rv);
    free(rm0), free(rv0), free(dx), free(dg), free(db);
    free(c.x), free(c.g), free(c.b), free(c.r), free(c.out);
}
END_TEST

/* A channel of 100,352 values with a large common offset: float sums would lose the variance. */
START_TEST(bn_large_offset)
{
    const int N = 128, HW = 784;
    const size_t n = (size_t)N * HW;
    const bn_dims d = {.n = N, .c = 1, .hw = HW, .eps = BN_EPS, .momentum = BN_MOMENTUM};
    float *x = randf(n, -1, 1), g = 1, b = 0, mean, istd, rm = 0, rv = 1;
    for (size_t i = 0; i < n; i++)
        x[i] += 1000.0f;
    double *xd = ref_from_float(x, n), *yd = malloc(n * sizeof *yd), mu, var;
    float *y = malloc(n * sizeof *y);
    ref_bn(yd, xd, &(double){1}, &(double){0}, N, 1, HW, BN_EPS, &mu, &var);
    bn_forward_train(y, x, &g, &b, &mean, &istd, &rm, &rv, &d);
    const double e = rel_diff(y, yd, n);
    printf("  bn, 100352 values around 1000: forward error %.1e, variance %.6f vs %.6f\n", e,
           1 / ((double)istd * istd) - BN_EPS, var);
    ck_assert_msg(e < 1e-4, "forward off by %.3g (tolerance 1e-4)", e);
    free(x), free(xd), free(yd), free(y);
}
END_TEST

/* ---- ReLU, dropout ---------------------------------------------------------------------------- */

typedef struct {
    size_t n;
    double *x, *r;
    int kind; /* 0 relu, 1 dropout */
    double p;
    uint64_t key;
} act_ctx;

static double act_loss(void *p)
{
    act_ctx *c = p;
    double s = 0;
    for (size_t i = 0; i < c->n; i++) {
        double y = c->x[i];
        if (c->kind == 0)
            ref_relu(&y, 1);
        else
            y *= lm_dropout_scale(c->key, i, (float)c->p);
        s += c->r[i] * y;
    }
    return s;
}

START_TEST(relu_gradcheck)
{
    const size_t n = 200;
    float *x = randf(n, -1, 1), *r = randf(n, -1, 1), *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++) /* keep away from the kink at 0 */
        x[i] += x[i] < 0 ? -0.05f : 0.05f;
    float *dx = filled(n, PREFILL);
    relu_forward(y, x, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(y[i] == (x[i] > 0 ? x[i] : 0), "relu(%g) = %g", x[i], y[i]);
    relu_backward(dx, r, y, n);
    act_ctx c = {n, ref_from_float(x, n), ref_from_float(r, n), 0, 0, 0};
    ref_var v[] = {{"in", c.x, dx, n, PREFILL}};
    expect_check("relu", ref_gradcheck(act_loss, &c, v, 1, n, H_LIN, TOL_LIN, 0), TOL_LIN);
    relu_forward(x, x, n); /* in place */
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(x[i] == y[i], "in place %zu: %g, out of place %g", i, x[i], y[i]);
    free(x), free(r), free(y), free(dx), free(c.x), free(c.r);
}
END_TEST

START_TEST(dropout_mask_and_gradcheck)
{
    const size_t n = 20000;
    const float p = 0.3f;
    const uint64_t key = dropout_key(7, 3, 1);
    float *x = randf(n, 0.5f, 1.5f), *y = malloc(n * sizeof *y), *y2 = malloc(n * sizeof *y2);
    dropout_forward(y, x, n, p, key, 1);
    size_t dropped = 0;
    for (size_t i = 0; i < n; i++) {
        if (y[i] == 0)
            dropped++;
        else
            ck_assert_msg(fabsf(y[i] - x[i] / (1 - p)) <= 1e-6f * y[i], "kept %zu not scaled", i);
    }
    const double frac = (double)dropped / n, sd = sqrt(p * (1 - p) / n);
    printf("  dropout p=0.3: %.4f dropped (5 sigma = %.4f)\n", frac, 5 * sd);
    ck_assert_msg(fabs(frac - p) < 5 * sd, "%.4f dropped, p %.2f (5 sigma %.4f)", frac, p, 5 * sd);
    dropout_forward(y2, x, n, p, key, 1); /* same key: same mask */
    ck_assert_msg(memcmp(y, y2, n * sizeof *y) == 0, "same key, another result");
    /* another step, layer or seed: a mask independent of this one, so the two disagree on
     * 2p(1-p) of the elements */
    const uint64_t others[3] = {dropout_key(7, 4, 1), dropout_key(7, 3, 2), dropout_key(8, 3, 1)};
    const char *other_name[3] = {"next step", "next layer", "next seed"};
    const double want_diff = 2 * p * (1 - p), sd_diff = sqrt(want_diff * (1 - want_diff) / n);
    for (int k = 0; k < 3; k++) {
        dropout_forward(y2, x, n, p, others[k], 1);
        size_t diff = 0;
        for (size_t i = 0; i < n; i++)
            diff += (y[i] == 0) != (y2[i] == 0);
        const double fd = (double)diff / n;
        ck_assert_msg(fabs(fd - want_diff) < 5 * sd_diff,
                      "%s: masks disagree on %.4f of the elements, independent ones on %.4f "
                      "(5 sigma %.4f)", other_name[k], fd, want_diff, 5 * sd_diff);
    }
    dropout_forward(y2, x, n, p, key, 0); /* inference: identity */
    ck_assert_msg(memcmp(x, y2, n * sizeof *y) == 0, "inference is not the identity");
    dropout_forward(y2, x, n, 0.0f, key, 1); /* p = 0: identity */
    ck_assert_msg(memcmp(x, y2, n * sizeof *y) == 0, "p = 0 is not the identity");

    const size_t m = 300;
    float *r = randf(m, -1, 1), *dx = filled(m, PREFILL);
    dropout_backward(dx, r, m, p, key);
    act_ctx c = {m, ref_from_float(x, m), ref_from_float(r, m), 1, p, key};
    ref_var v[] = {{"in", c.x, dx, m, PREFILL}};
    expect_check("dropout p=0.3", ref_gradcheck(act_loss, &c, v, 1, m, H_LIN, TOL_LIN, 0), TOL_LIN);
    free(x), free(y), free(y2), free(r), free(dx), free(c.x), free(c.r);
}
END_TEST

/* ---- pools, dense, cross-entropy ------------------------------------------------------------ */

typedef struct {
    int N, C, H, W, kind; /* 0 maxpool, 1 gap */
    double *x, *r, *out;
} pool_ctx;

static double pool_loss(void *p)
{
    pool_ctx *c = p;
    if (c->kind == 0) {
        ref_maxpool(c->out, c->x, c->N, c->C, c->H, c->W);
        return dot(c->r, c->out, (size_t)c->N * c->C * (c->H / 2) * (c->W / 2));
    }
    ref_gap(c->out, c->x, c->N, c->C, c->H * c->W);
    return dot(c->r, c->out, (size_t)c->N * c->C);
}

static void check_pool(int kind)
{
    const pool_dims d = {.n = 2, .c = 3, .h = 6, .w = 7}; /* odd width: last column dropped */
    const size_t nx = 2 * 3 * 6 * 7, ny = kind == 0 ? 2 * 3 * 3 * 3 : 2 * 3;
    float *x = randf(nx, -1, 1), *r = randf(ny, -1, 1), *y = malloc(ny * sizeof *y);
    float *dx = filled(nx, PREFILL);
    pool_ctx c = {2, 3, 6, 7, kind, ref_from_float(x, nx), ref_from_float(r, ny),
                  malloc(ny * sizeof(double))};
    if (kind == 0) {
        maxpool2_forward(y, x, &d);
        maxpool2_backward(dx, r, x, y, &d);
    } else {
        gap_forward(y, x, &d);
        gap_backward(dx, r, &d);
    }
    pool_loss(&c);
    const double fe = rel_diff(y, c.out, ny);
    ck_assert_msg(fe < 1e-6, "forward off by %.3g (tolerance 1e-6)", fe);
    ref_var v[] = {{"in", c.x, dx, nx, PREFILL}};
    expect_check(kind == 0 ? "maxpool 2x2 (6x7)" : "global average pool",
                 ref_gradcheck(pool_loss, &c, v, 1, nx, 1e-4, TOL_LIN, 0), TOL_LIN);
    free(x), free(r), free(y), free(dx), free(c.x), free(c.r), free(c.out);
}

START_TEST(maxpool_gradcheck) { check_pool(0); }
END_TEST
START_TEST(gap_gradcheck) { check_pool(1); }
END_TEST

/* Equal maxima: the whole gradient goes to the first one (row-major), as PyTorch does. */
START_TEST(maxpool_ties)
{
    const pool_dims d = {.n = 1, .c = 1, .h = 2, .w = 2};
    const float x[4] = {0.5f, 2.0f, 2.0f, 2.0f};
    float y, dx[4] = {0}, g = 3.0f;
    maxpool2_forward(&y, x, &d);
    maxpool2_backward(dx, &g, x, &y, &d);
    ck_assert_float_eq(y, 2.0f);
    ck_assert_msg(dx[0] == 0 && dx[1] == 3.0f && dx[2] == 0 && dx[3] == 0,
                  "dx = {%g, %g, %g, %g}, want {0, 3, 0, 0}", dx[0], dx[1], dx[2], dx[3]);
}
END_TEST

typedef struct {
    int N, I, O;
    double *x, *w, *b, *r, *out;
} dense_ctx;

static double dense_loss(void *p)
{
    dense_ctx *c = p;
    ref_dense(c->out, c->x, c->w, c->b, c->N, c->I, c->O);
    return dot(c->r, c->out, (size_t)c->N * c->O);
}

START_TEST(dense_gradcheck)
{
    const int N = 3, I = 7, O = 5;
    const dense_dims d = {.n = N, .in = I, .out = O};
    float *x = randf(N * I, -1, 1), *w = randf(O * I, -1, 1), *b = randf(O, -1, 1);
    float *r = randf(N * O, -1, 1), *y = malloc(N * O * sizeof *y);
    float *dx = filled(N * I, PREFILL), *dw = filled(O * I, PREFILL), *db = filled(O, PREFILL);
    dense_ctx c = {N, I, O, ref_from_float(x, N * I), ref_from_float(w, O * I),
                   ref_from_float(b, O), ref_from_float(r, N * O), malloc(N * O * sizeof(double))};
    dense_forward(y, x, w, b, &d);
    dense_loss(&c);
    const double fe = rel_diff(y, c.out, N * O);
    ck_assert_msg(fe < 1e-6, "forward off by %.3g (tolerance 1e-6)", fe);
    dense_backward(dx, dw, db, r, x, w, &d);
    ref_var v[] = {{"in", c.x, dx, N * I, PREFILL}, {"w", c.w, dw, O * I, PREFILL},
                   {"b", c.b, db, O, PREFILL}};
    expect_check("dense 7->5", ref_gradcheck(dense_loss, &c, v, 3, 100, H_LIN, TOL_LIN, 0), TOL_LIN);
    free(x), free(w), free(b), free(r), free(y), free(dx), free(dw), free(db);
    free(c.x), free(c.w), free(c.b), free(c.r), free(c.out);
}
END_TEST

typedef struct {
    int N, K;
    double *z;
    const int *y;
} xent_ctx;

static double xent_loss(void *p)
{
    xent_ctx *c = p;
    return ref_xent(c->z, c->y, c->N, c->K);
}

START_TEST(xent_gradcheck_and_stability)
{
    const int N = 4, K = 10, y[4] = {3, 0, 9, 3};
    float *z = randf(N * K, -3, 3), *pr = malloc(N * K * sizeof *pr), *dz = filled(N * K, PREFILL);
    z[1 * K + 0] = 5.0f; /* row 1 predicts its label */
    xent_ctx c = {N, K, ref_from_float(z, N * K), y};
    const double loss = xent_forward(pr, z, y, N, K);
    ck_assert_msg(fabs(loss - xent_loss(&c)) < 1e-6 * fabs(loss), "loss %g", loss);
    xent_backward(dz, pr, y, N, K, 1.0f);
    ref_var v[] = {{"logits", c.z, dz, N * K, PREFILL}};
    expect_check("softmax cross-entropy",
                 ref_gradcheck(xent_loss, &c, v, 1, 100, H_NONLIN, TOL_NONLIN, 0), TOL_NONLIN);
    int want = 0;
    for (int n = 0; n < N; n++) {
        int best = 0;
        for (int k = 1; k < K; k++)
            best = z[n * K + k] > z[n * K + best] ? k : best;
        want += best == y[n];
    }
    ck_assert_int_ge(want, 1);
    ck_assert_int_eq(xent_correct(z, y, N, K), want);

    /* logits around 1e4 overflow exp() in float unless the maximum is taken out */
    for (int i = 0; i < N * K; i++)
        z[i] = 1e4f + 100.0f * z[i];
    free(c.z);
    c.z = ref_from_float(z, N * K);
    const double big = xent_forward(pr, z, y, N, K);
    ck_assert_msg(isfinite(big) && fabs(big - xent_loss(&c)) < 1e-6 * fabs(big), "big %g", big);
    for (int n = 0; n < N; n++) {
        double s = 0;
        for (int k = 0; k < K; k++)
            s += pr[n * K + k];
        ck_assert_msg(fabs(s - 1) < 1e-5, "row %d: probabilities sum to %.8f", n, s);
    }
    free(z), free(pr), free(dz), free(c.z);
}
END_TEST

/* ---- params helpers ------------------------------------------------------------------------- */

START_TEST(params_helpers)
{
    const float v3[3] = {1.0f, -2.5f, 3.25f};
    /* FNV-1a 64 of the 12 little-endian bytes, computed independently (Python) */
    ck_assert_uint_eq(params_checksum(v3, 3), 0x01970969efc013e8ull);
    ck_assert_uint_eq(params_checksum(v3, 0), 0xcbf29ce484222325ull); /* offset basis */
    float v3b[3] = {1.0f, -2.5f, 3.25f};
    uint32_t bits;
    memcpy(&bits, &v3b[2], 4);
    bits ^= 1; /* one ulp */
    memcpy(&v3b[2], &bits, 4);
    ck_assert_uint_ne(params_checksum(v3b, 3), params_checksum(v3, 3));

    float p[6] = {1, 2, 3, 4, 5, 6}, g[6] = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
    param_view views[3] = {{.name = "a.w", .offset = 0, .count = 2, .decay = 1},
                           {.name = "a.b", .offset = 2, .count = 1, .decay = 0},
                           {.name = "fc.w", .offset = 3, .count = 3, .decay = 1}};
    param_set ps = {.params = p, .grads = g, .n = 6, .views = views, .nviews = 3};
    ck_assert_ptr_eq(params_find(views, 3, "a.b"), &views[1]);
    ck_assert_ptr_null(params_find(views, 3, "a"));
    ck_assert_double_eq(params_add_l2(&ps, 0.0f), 0.0);
    ck_assert_float_eq(g[0], 0.5f);
    ck_assert_float_eq(g[2], 0.5f);
    const double l2 = params_add_l2(&ps, 0.125f);
    ck_assert_msg(fabs(l2 - 0.125 * (1 + 4 + 16 + 25 + 36)) < 1e-12, "l2 %g", l2);
    const float want[6] = {0.75f, 1.0f, 0.5f, 1.5f, 1.75f, 2.0f}; /* g + 2·wd·w on decay views */
    for (int i = 0; i < 6; i++)
        ck_assert_msg(g[i] == want[i], "grad %d: %g want %g", i, g[i], want[i]);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("layers");
    TCase *t = tcase_create("layers");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, conv_3x3_small);
    tcase_add_test(t, conv_1x1_small);
    tcase_add_test(t, conv_1x1_pixel);
    tcase_add_test(t, conv_3x3_chunked);
    tcase_add_test(t, conv_3x3_tiny_image);
    tcase_add_test(t, bn_train_gradcheck);
    tcase_add_test(t, bn_large_offset);
    tcase_add_test(t, relu_gradcheck);
    tcase_add_test(t, dropout_mask_and_gradcheck);
    tcase_add_test(t, maxpool_gradcheck);
    tcase_add_test(t, gap_gradcheck);
    tcase_add_test(t, maxpool_ties);
    tcase_add_test(t, dense_gradcheck);
    tcase_add_test(t, xent_gradcheck_and_stability);
    tcase_add_test(t, params_helpers);
    suite_add_tcase(s, t);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, suite(), 0); }
