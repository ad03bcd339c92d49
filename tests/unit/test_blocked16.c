/* test_blocked16.c — the nChw16c layers (nn/blocked16.h) and the oneDNN convolutions with
 * nChw16c activations (conv2d_dims.blocked) against their NCHW namesakes, on random data
 * converted with nchw16c_from_nchw and the results converted back.
 *
 * Exact (bit for bit; the same float operations per element): max-pool forward and backward
 * (inputs on a coarse grid, so windows tie), GAP forward and backward, batch-norm inference,
 * and the training forward's apply step against the scalar formula with the statistics the
 * blocked run saved — in particular the dropout mask keyed by the flat NCHW index (act.h), so
 * a blocked run drops the very elements an NCHW run drops. Convolutions too: the same oneDNN
 * kernels run, only the reorders around them go.
 * Close (channel sums in another order): batch statistics, running statistics and the backward
 * (din, dgamma, dbeta) — tolerance REL of the tensor's largest magnitude.
 * Threads: every blocked layer gives the same bits on 1, 2 and 3 threads.
 * Shapes: the wrn-16-K widths (16, 32, 64, 128 channels), 7x7 to 28x28, odd pools, and 1040
 * channels (more than the 64 blocks the batch norm handles at once).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/threads.h"
#include "lib/ck_mpi.h"
#include "lib/fill.h"
#include "nn/act.h"
#include "nn/blocked16.h"
#include "nn/bn.h"
#include "nn/conv2d.h"
#include "nn/layer_math.h"
#include "nn/pool.h"

#define REL 1e-5

static uint64_t rng = 1616;

static float *randf(size_t n, float lo, float hi) { return rand_floats(&rng, n, lo, hi); }

static float *blk(const float *x, int n, int c, int hw)
{
    float *y = malloc((size_t)n * c * hw * sizeof *y);
    nchw16c_from_nchw(y, x, n, c, hw);
    return y;
}

static float *unblk(const float *x, int n, int c, int hw)
{
    float *y = malloc((size_t)n * c * hw * sizeof *y);
    nchw_from_nchw16c(y, x, n, c, hw);
    return y;
}

static int same(const float *a, const float *b, size_t n) { return !memcmp(a, b, n * 4); }

/* max |a − b| / max |b| (0 when both are 0). */
static double rel_err(const float *a, const float *b, size_t n)
{
    double e = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        e = fmax(e, fabs((double)a[i] - b[i]));
        s = fmax(s, fabs((double)b[i]));
    }
    return s > 0 ? e / s : e;
}

/* The conversion is oneDNN's nChw16c: element (n, c, hw) at ((n·C/16 + c/16)·HW + hw)·16 + c%16. */
START_TEST(conversion_is_nchw16c)
{
    const int N = 2, C = 32, HW = 5;
    float *x = randf((size_t)N * C * HW, -1, 1), *y = blk(x, N, C, HW), *z = unblk(y, N, C, HW);
    int bad = 0;
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int i = 0; i < HW; i++)
                bad += y[(((size_t)n * (C / 16) + c / 16) * HW + i) * 16 + c % 16] !=
                       x[((size_t)n * C + c) * HW + i];
    CK_EXPECT(bad == 0, "%d elements not where nChw16c puts them", bad);
    CK_EXPECT(same(x, z, (size_t)N * C * HW), "nchw -> nChw16c -> nchw is not the identity");
    free(x), free(y), free(z);
    CK_AGREE();
}
END_TEST

typedef struct {
    int N, C, HW;
    size_t n;
    float *x, *g, *b, *add, *dout; /* NCHW */
} bn_case;

static bn_case make_case(int N, int C, int HW)
{
    bn_case k = {N, C, HW, (size_t)N * C * HW, NULL, NULL, NULL, NULL, NULL};
    k.x = randf(k.n, -2, 2);
    for (size_t i = 0; i < k.n; i++) /* channels with their own offsets and spreads */
        k.x[i] = k.x[i] * (float)(1 + (i / HW) % 5) + 0.5f * (float)((i / HW) % 7);
    k.g = randf(C, 0.5f, 1.5f);
    k.b = randf(C, -0.5f, 0.5f);
    k.add = randf(k.n, -1, 1);
    k.dout = randf(k.n, -1, 1);
    return k;
}

static void free_case(bn_case *k) { free(k->x), free(k->g), free(k->b), free(k->add), free(k->dout); }

/* The blocked training forward and backward of one fused form against NCHW. */
static void check_bn(const bn_case *k, float p, int with_add, int mask_from_out)
{
    const bn_dims d = {.n = k->N, .c = k->C, .hw = k->HW, .eps = BN_EPS, .momentum = BN_MOMENTUM};
    const int N = k->N, C = k->C, HW = k->HW;
    const size_t n = k->n;
    const uint64_t key = dropout_key(3, 9, 1);
    float *m1 = malloc(C * 4), *s1 = malloc(C * 4), *m2 = malloc(C * 4), *s2 = malloc(C * 4);
    float *rm1 = randf(C, -0.1f, 0.1f), *rv1 = randf(C, 0.5f, 1.5f);
    float *rm2 = malloc(C * 4), *rv2 = malloc(C * 4);
    memcpy(rm2, rm1, C * 4), memcpy(rv2, rv1, C * 4);
    float *y1 = malloc(n * 4), *xb = blk(k->x, N, C, HW), *ab = blk(k->add, N, C, HW);
    float *yb = malloc(n * 4);
    bn_relu_forward_train(y1, k->x, with_add ? k->add : NULL, p, key, k->g, k->b, m1, s1, rm1,
                          rv1, &d);
    bn_relu_forward_train_c16(yb, xb, with_add ? ab : NULL, p, key, k->g, k->b, m2, s2, rm2, rv2,
                              &d);
    float *y2 = unblk(yb, N, C, HW);
    CK_EXPECT(rel_err(m2, m1, C) <= REL && rel_err(s2, s1, C) <= REL,
              "C %d: batch mean/invstd differ by %.2g/%.2g", C, rel_err(m2, m1, C),
              rel_err(s2, s1, C));
    CK_EXPECT(rel_err(rm2, rm1, C) <= REL && rel_err(rv2, rv1, C) <= REL,
              "C %d: running mean/var differ by %.2g/%.2g", C, rel_err(rm2, rm1, C),
              rel_err(rv2, rv1, C));
    CK_EXPECT(rel_err(y2, y1, n) <= REL, "C %d p %.1f add %d: forward differs by %.2g", C, p,
              with_add, rel_err(y2, y1, n));
    /* exact with its own statistics, the mask keyed by the flat NCHW index */
    const float keep = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
    const uint32_t drop = lm_dropout_threshold(p);
    size_t bad = 0, dropped = 0;
    for (size_t i = 0; i < n; i++) {
        const int c = (int)(i / HW % C);
        const int off = lm_bits24(key, i) < drop;
        float v = lm_relu(lm_bn_apply(k->x[i], m2[c], s2[c], k->g[c], k->b[c])) *
                  (off ? 0.0f : keep);
        if (with_add)
            v += k->add[i];
        bad += v != y2[i];
        dropped += off;
    }
    CK_EXPECT(bad == 0, "C %d p %.1f add %d: %zu of %zu outputs are not relu(bn(x)) x the mask of "
              "(key, NCHW index)", C, p, with_add, bad, n);
    CK_EXPECT(p == 0.0f || dropped > n / 10, "p %.1f dropped only %zu of %zu", p, dropped, n);

    float *dx1 = malloc(n * 4), *dxb = randf(n, 5, 6); /* overwritten, not added to */
    float *dg1 = calloc(C, 4), *db1 = calloc(C, 4), *dg2 = calloc(C, 4), *db2 = calloc(C, 4);
    float *dob = blk(k->dout, N, C, HW);
    bn_relu_backward(dx1, dg1, db1, k->dout, k->x, mask_from_out ? y1 : NULL, p, k->g, k->b, m1,
                     s1, &d);
    bn_relu_backward_c16(dxb, dg2, db2, dob, xb, mask_from_out ? yb : NULL, p, k->g, k->b, m2, s2,
                         &d);
    float *dx2 = unblk(dxb, N, C, HW);
    float *dg3 = calloc(C, 4), *db3 = calloc(C, 4); /* without din: the same sums */
    bn_relu_backward_c16(NULL, dg3, db3, dob, xb, mask_from_out ? yb : NULL, p, k->g, k->b, m2,
                         s2, &d);
    CK_EXPECT(same(dg2, dg3, C) && same(db2, db3, C), "C %d p %.1f: dgamma/dbeta without din "
              "differ", C, p);
    free(dg3), free(db3);
    CK_EXPECT(rel_err(dx2, dx1, n) <= 10 * REL, "C %d p %.1f: backward din differs by %.2g", C, p,
              rel_err(dx2, dx1, n));
    CK_EXPECT(rel_err(dg2, dg1, C) <= 10 * REL && rel_err(db2, db1, C) <= 10 * REL,
              "C %d p %.1f: dgamma/dbeta differ by %.2g/%.2g", C, p, rel_err(dg2, dg1, C),
              rel_err(db2, db1, C));
    printf("  bn+relu C %4d HW %3d p %.1f add %d mask %s: forward %.1e, din %.1e, dgamma %.1e\n",
           C, HW, p, with_add, mask_from_out ? "out" : "recomputed", rel_err(y2, y1, n),
           rel_err(dx2, dx1, n), rel_err(dg2, dg1, C));
    free(m1), free(s1), free(m2), free(s2), free(rm1), free(rv1), free(rm2), free(rv2), free(y1);
    free(xb), free(ab), free(yb), free(y2), free(dx1), free(dxb), free(dg1), free(db1), free(dg2);
    free(db2), free(dob), free(dx2);
}

START_TEST(bn_relu_matches_nchw)
{
    const int shapes[5][3] = {{6, 16, 784}, {5, 32, 196}, {4, 64, 49}, {3, 128, 49}, {2, 1040, 4}};
    for (int s = 0; s < 5; s++) {
        bn_case k = make_case(shapes[s][0], shapes[s][1], shapes[s][2]);
        check_bn(&k, 0.3f, 0, 1); /* bn1 + relu + dropout, mask from the output */
        check_bn(&k, 0.0f, 0, 1); /* stem */
        check_bn(&k, 0.0f, 1, 0); /* bn2 + relu + shortcut add, mask recomputed */
        check_bn(&k, 0.3f, 1, 0); /* dropout and add together (not in the WRN) */
        free_case(&k);
    }
    CK_AGREE();
}
END_TEST

START_TEST(bn_relu_inference_exact)
{
    bn_case k = make_case(3, 48, 49);
    const bn_dims d = {.n = 3, .c = 48, .hw = 49, .eps = BN_EPS, .momentum = BN_MOMENTUM};
    float *rm = randf(48, -0.5f, 0.5f), *rv = randf(48, 0.5f, 2.0f);
    float *y1 = malloc(k.n * 4), *yb = malloc(k.n * 4), *xb = blk(k.x, 3, 48, 49);
    float *ab = blk(k.add, 3, 48, 49);
    for (int with_add = 0; with_add < 2; with_add++) {
        bn_relu_forward_infer(y1, k.x, with_add ? k.add : NULL, k.g, k.b, rm, rv, &d);
        bn_relu_forward_infer_c16(yb, xb, with_add ? ab : NULL, k.g, k.b, rm, rv, &d);
        float *y2 = unblk(yb, 3, 48, 49);
        CK_EXPECT(same(y1, y2, k.n), "inference (add %d) differs from NCHW", with_add);
        free(y2);
    }
    free(rm), free(rv), free(y1), free(yb), free(xb), free(ab);
    free_case(&k);
    CK_AGREE();
}
END_TEST

/* Max-pool and GAP forward and backward: bit for bit, dx prefilled (the model zeroes it; += ). */
START_TEST(pools_exact)
{
    const int shapes[4][4] = {{3, 16, 28, 28}, {2, 32, 14, 14}, {2, 64, 7, 7}, {2, 16, 5, 9}};
    for (int s = 0; s < 4; s++) {
        const pool_dims pd = {
            .n = shapes[s][0], .c = shapes[s][1], .h = shapes[s][2], .w = shapes[s][3]};
        const int N = pd.n, C = pd.c, HW = pd.h * pd.w, HWo = (pd.h / 2) * (pd.w / 2);
        const size_t n = (size_t)N * C * HW, np = (size_t)N * C * HWo;
        float *x = randf(n, -1, 1), *dy = randf(np, -1, 1), *dx1 = randf(n, -1, 1);
        for (size_t i = 0; i < n; i++)
            x[i] = roundf(x[i] * 2.0f) / 2.0f; /* 5 values: ties everywhere */
        float *y1 = malloc(np * 4), *yb = malloc(np * 4), *xb = blk(x, N, C, HW);
        float *dyb = blk(dy, N, C, HWo), *dxb = blk(dx1, N, C, HW);
        maxpool2_forward(y1, x, &pd);
        maxpool2_forward_c16(yb, xb, &pd);
        float *y2 = unblk(yb, N, C, HWo);
        CK_EXPECT(same(y1, y2, np), "maxpool forward %dx%dx%dx%d differs", N, C, pd.h, pd.w);
        maxpool2_backward(dx1, dy, x, y1, &pd);
        maxpool2_backward_c16(dxb, dyb, xb, yb, &pd);
        float *dx2 = unblk(dxb, N, C, HW);
        CK_EXPECT(same(dx1, dx2, n), "maxpool backward %dx%dx%dx%d differs", N, C, pd.h, pd.w);
        float *f1 = malloc((size_t)N * C * 4), *f2 = malloc((size_t)N * C * 4);
        gap_forward(f1, x, &pd);
        gap_forward_c16(f2, xb, &pd);
        CK_EXPECT(same(f1, f2, (size_t)N * C), "GAP forward %dx%dx%dx%d differs", N, C, pd.h, pd.w);
        float *df = randf((size_t)N * C, -1, 1), *g1 = randf(n, -1, 1), *gb = blk(g1, N, C, HW);
        gap_backward(g1, df, &pd);
        gap_backward_c16(gb, df, &pd);
        float *g2 = unblk(gb, N, C, HW);
        CK_EXPECT(same(g1, g2, n), "GAP backward %dx%dx%dx%d differs", N, C, pd.h, pd.w);
        free(x), free(dy), free(dx1), free(y1), free(yb), free(xb), free(dyb), free(dxb);
        free(y2), free(dx2), free(f1), free(f2), free(df), free(g1), free(gb), free(g2);
    }
    CK_AGREE();
}
END_TEST

/* Every blocked layer on 1, 2 and 3 threads: the same bits. */
START_TEST(thread_count_does_not_matter)
{
    const int N = 5, C = 48, H = 14, W = 14, HW = H * W;
    bn_case k = make_case(N, C, HW);
    const bn_dims d = {.n = N, .c = C, .hw = HW, .eps = BN_EPS, .momentum = BN_MOMENTUM};
    const pool_dims pd = {.n = N, .c = C, .h = H, .w = W};
    const size_t n = k.n, np = (size_t)N * C * (H / 2) * (W / 2);
    float *xb = blk(k.x, N, C, HW), *ref[5] = {0};
    const char *what[5] = {"bn+relu+dropout forward", "bn+relu backward", "maxpool forward",
                           "maxpool backward", "GAP forward"};
    const size_t len[5] = {n, n, np, n, (size_t)N * C};
    const int saved = compute_threads();
    for (int threads = 1; threads <= 3; threads++) {
        compute_set_threads(threads);
        float *o[5];
        for (int i = 0; i < 5; i++)
            o[i] = calloc(len[i], sizeof(float));
        float mean[48], istd[48], rm[48] = {0}, rv[48] = {0}, dg[48] = {0}, db[48] = {0};
        bn_relu_forward_train_c16(o[0], xb, NULL, 0.3f, 77, k.g, k.b, mean, istd, rm, rv, &d);
        bn_relu_backward_c16(o[1], dg, db, k.dout, xb, o[0], 0.3f, k.g, k.b, mean, istd, &d);
        maxpool2_forward_c16(o[2], xb, &pd);
        maxpool2_backward_c16(o[3], k.dout, xb, o[2], &pd);
        gap_forward_c16(o[4], xb, &pd);
        for (int i = 0; i < 5; i++) {
            if (threads == 1) {
                ref[i] = o[i];
                continue;
            }
            CK_EXPECT(same(ref[i], o[i], len[i]), "%s on %d threads differs from 1 thread",
                      what[i], threads);
            free(o[i]);
        }
    }
    compute_set_threads(saved);
    for (int i = 0; i < 5; i++)
        free(ref[i]);
    free(xb);
    free_case(&k);
    CK_AGREE();
}
END_TEST

#ifdef HVDLAB_DNNL
/* One conv shape, blocked against NCHW: forward, backward (+=) and backward_set; exact. */
static void check_conv(int N, int cin, int cout, int hw, int k)
{
    conv2d_dims d = {.n = N, .cin = cin, .h = hw, .w = hw, .cout = cout, .k = k};
    conv2d_dims db = d;
    db.blocked = 1;
    const int HW = hw * hw;
    const size_t nin = (size_t)N * cin * HW, nout = (size_t)N * cout * HW;
    const size_t nw = (size_t)cout * cin * k * k, w1 = conv2d_work_floats(&d);
    const size_t w2 = conv2d_work_floats(&db);
    float *work = malloc((w1 > w2 ? w1 : w2) * 4);
    float *x = randf(nin, -1, 1), *w = randf(nw, -0.5f, 0.5f), *b = randf(cout, -1, 1);
    float *dy = randf(nout, -1, 1);
    /* the stem's 1-channel input stays NCHW */
    float *xb = cin % 16 ? x : blk(x, N, cin, HW), *dyb = blk(dy, N, cout, HW);
    float *y1 = malloc(nout * 4), *yb = malloc(nout * 4);
    conv2d_forward(y1, x, w, b, &d, work);
    conv2d_forward(yb, xb, w, b, &db, work);
    float *y2 = unblk(yb, N, cout, HW);
    CK_EXPECT(same(y1, y2, nout), "conv %dx%d %d->%d %dx%d: blocked forward differs by %.2g", k, k,
              cin, cout, hw, hw, rel_err(y2, y1, nout));
    float *dw1 = randf(nw, -1, 1), *dw2 = malloc(nw * 4), *dbi1 = randf(cout, -1, 1);
    float *dbi2 = malloc(cout * 4);
    memcpy(dw2, dw1, nw * 4), memcpy(dbi2, dbi1, cout * 4);
    float *dx1 = randf(nin, -1, 1), *dxb = cin % 16 ? NULL : blk(dx1, N, cin, HW);
    for (int set = 0; set < 2 && dxb; set++) {
        if (set) {
            conv2d_backward_set(dx1, dw1, dbi1, dy, x, w, &d, work);
            conv2d_backward_set(dxb, dw2, dbi2, dyb, xb, w, &db, work);
        } else {
            conv2d_backward(dx1, dw1, dbi1, dy, x, w, &d, work);
            conv2d_backward(dxb, dw2, dbi2, dyb, xb, w, &db, work);
        }
        float *dx2 = unblk(dxb, N, cin, HW);
        CK_EXPECT(same(dx1, dx2, nin), "conv %dx%d %d->%d %dx%d: blocked backward%s din differs "
                  "by %.2g", k, k, cin, cout, hw, hw, set ? "_set" : "", rel_err(dx2, dx1, nin));
        free(dx2);
    }
    if (!dxb) { /* the stem: no input gradient */
        conv2d_backward(NULL, dw1, dbi1, dy, x, w, &d, work);
        conv2d_backward(NULL, dw2, dbi2, dyb, xb, w, &db, work);
    }
    CK_EXPECT(same(dw1, dw2, nw) && same(dbi1, dbi2, cout),
              "conv %dx%d %d->%d %dx%d: blocked dW/db differ by %.2g/%.2g", k, k, cin, cout, hw,
              hw, rel_err(dw2, dw1, nw), rel_err(dbi2, dbi1, cout));
    free(work), free(x), free(w), free(b), free(dy), free(dyb), free(y1), free(yb), free(y2);
    free(dw1), free(dw2), free(dbi1), free(dbi2), free(dx1), free(dxb);
    if (xb != x)
        free(xb);
}

START_TEST(conv_blocked_matches_nchw)
{
    CK_EXPECT(conv2d_set_backend("dnnl") == 0, "no dnnl backend");
    /* wrn-16-1's shapes (stem, 3x3, 1x1 shortcuts) */
    const int shapes[7][4] = {{1, 16, 28, 3},  {16, 16, 28, 3}, {16, 32, 14, 3}, {32, 32, 14, 3},
                              {16, 32, 14, 1}, {32, 64, 7, 3},  {64, 64, 7, 1}};
    for (int s = 0; s < 7; s++) /* one piece of the batch, and several (41 to 166 a piece) */
        for (int n = 37; n <= 200; n += 163)
            check_conv(n, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3]);
    CK_AGREE();
}
END_TEST
#endif

static Suite *suite(void)
{
    Suite *s = suite_create("blocked16");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, conversion_is_nchw16c);
    tcase_add_test(tc, bn_relu_matches_nchw);
    tcase_add_test(tc, bn_relu_inference_exact);
    tcase_add_test(tc, pools_exact);
    tcase_add_test(tc, thread_count_does_not_matter);
#ifdef HVDLAB_DNNL
    tcase_add_test(tc, conv_blocked_matches_nchw);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, suite(), 0); }
