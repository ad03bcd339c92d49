/* test_fused_layers.c — the fused batch-norm forms (bn.h: bn_relu_forward_train/infer,
 * bn_relu_backward) against the separate layers they replace, and the threaded layers against
 * themselves on 1, 2 and 3 threads.
 *
 * Fused vs separate: bn_relu_forward_train(out, in, add, p, key) must give exactly (bit for bit)
 * bn_forward_train, relu_forward, dropout_forward and the add in sequence, with the same batch
 * statistics and running-statistics updates; bn_relu_backward must give the gradients of
 * relu_backward + dropout_backward + bn_backward in sequence, also bit for bit (same operations
 * in the same order), with the ReLU mask read off the fused output or recomputed from the input.
 * The gradient checks of the separate layers are in test_layers.c, of the block in
 * test_wrn_grad.c. Shapes: H·W = 49 and 30 (rows with a tail after the 8-float lanes), 3 and 5
 * channels, dropout 0.3 (many dropped elements), and p equal to one element's own draw (the
 * integer threshold of the fused dropout must keep it, as dropout_forward does).
 *
 * Max-pool backward (vectorised with selects) against the plain loop, bit for bit, on the wrn
 * pools' shapes with tied maxima.
 *
 * Threads: batch norm (all forms) and the pools split their work by channel/plane; the results
 * must not depend on how many threads run (compared bit for bit on 1, 2 and 3 threads).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/threads.h"
#include "lib/ck_mpi.h"
#include "lib/fill.h"
#include "nn/act.h"
#include "nn/bn.h"
#include "nn/layer_math.h"
#include "nn/pool.h"

static uint64_t rng = 4242;

static float *randf(size_t n, float lo, float hi) { return rand_floats(&rng, n, lo, hi); }

static float *copyf(const float *a, size_t n)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    memcpy(x, a, n * sizeof *x);
    return x;
}

static int same(const float *a, const float *b, size_t n)
{
    return memcmp(a, b, n * sizeof *a) == 0;
}

typedef struct {
    int N, C, HW;
    size_t n;
    float *x, *g, *b, *add, *dout;
} bn_case;

static bn_case make_case(int N, int C, int HW)
{
    bn_case k = {N, C, HW, (size_t)N * C * HW, NULL, NULL, NULL, NULL, NULL};
    k.x = randf(k.n, -2, 2);
    for (size_t i = 0; i < k.n; i++) /* channels with their own offsets and spreads */
        k.x[i] = k.x[i] * (float)(1 + (i / HW) % C) + 0.5f * (float)((i / HW) % C);
    k.g = randf(C, 0.5f, 1.5f);
    k.b = randf(C, -0.5f, 0.5f);
    k.add = randf(k.n, -1, 1);
    k.dout = randf(k.n, -1, 1);
    return k;
}

static void free_case(bn_case *k)
{
    free(k->x), free(k->g), free(k->b), free(k->add), free(k->dout);
}

/* One fused configuration against the separate layers. */
static void check_fused(const bn_case *k, float p, int with_add, int mask_from_out)
{
    const bn_dims d = {.n = k->N, .c = k->C, .hw = k->HW, .eps = BN_EPS, .momentum = BN_MOMENTUM};
    const uint64_t key = dropout_key(11, 5, 2);
    const size_t n = k->n, C = (size_t)k->C;
    /* separate layers */
    float *y1 = malloc(n * sizeof *y1), *m1 = malloc(C * 4), *s1 = malloc(C * 4);
    float *rm1 = randf(C, -0.1f, 0.1f), *rv1 = randf(C, 0.5f, 1.5f);
    float *rm2 = copyf(rm1, C), *rv2 = copyf(rv1, C);
    bn_forward_train(y1, k->x, k->g, k->b, m1, s1, rm1, rv1, &d);
    relu_forward(y1, y1, n);
    dropout_forward(y1, y1, n, p, key, 1);
    if (with_add)
        for (size_t i = 0; i < n; i++)
            y1[i] += k->add[i];
    /* fused */
    float *y2 = malloc(n * sizeof *y2), *m2 = malloc(C * 4), *s2 = malloc(C * 4);
    bn_relu_forward_train(y2, k->x, with_add ? k->add : NULL, p, key, k->g, k->b, m2, s2, rm2,
                          rv2, &d);
    CK_EXPECT(same(y1, y2, n), "fused forward (p %.1f, add %d) differs from the layers", p,
              with_add);
    CK_EXPECT(same(m1, m2, C) && same(s1, s2, C), "fused batch statistics differ");
    CK_EXPECT(same(rm1, rm2, C) && same(rv1, rv2, C), "fused running statistics differ");

    /* backward: separate = dropout_backward, relu_backward (mask = the ReLU output), bn_backward */
    float *relu_out = malloc(n * sizeof *relu_out), *t = calloc(n, sizeof *t);
    float *t2 = calloc(n, sizeof *t2), *dx1 = calloc(n, sizeof *dx1);
    float *dg1 = calloc(C, 4), *db1 = calloc(C, 4), *dg2 = calloc(C, 4), *db2 = calloc(C, 4);
    float *mm = malloc(C * 4), *ss = malloc(C * 4), *rm = calloc(C, 4), *rv = calloc(C, 4);
    bn_forward_train(relu_out, k->x, k->g, k->b, mm, ss, rm, rv, &d);
    relu_forward(relu_out, relu_out, n);
    dropout_backward(t, k->dout, n, p, key);
    relu_backward(t2, t, relu_out, n);
    bn_backward(dx1, dg1, db1, t2, k->x, k->g, m1, s1, &d);
    float *dx2 = randf(n, 5, 6); /* overwritten, not added to */
    bn_relu_backward(dx2, dg2, db2, k->dout, k->x, mask_from_out ? y2 : NULL, p, k->g, k->b, m2,
                     s2, &d);
    CK_EXPECT(same(dx1, dx2, n), "fused backward din (p %.1f, mask %s) differs", p,
              mask_from_out ? "from out" : "recomputed");
    CK_EXPECT(same(dg1, dg2, C) && same(db1, db2, C), "fused backward dgamma/dbeta differ");
    free(y1), free(m1), free(s1), free(rm1), free(rv1), free(rm2), free(rv2), free(y2), free(m2);
    free(s2), free(relu_out), free(t), free(t2), free(dx1), free(dg1), free(db1), free(dg2);
    free(db2), free(mm), free(ss), free(rm), free(rv), free(dx2);
}

START_TEST(fused_equals_separate)
{
    const int shapes[2][3] = {{4, 3, 49}, {3, 5, 30}};
    for (int s = 0; s < 2; s++) {
        bn_case k = make_case(shapes[s][0], shapes[s][1], shapes[s][2]);
        check_fused(&k, 0.3f, 0, 1);  /* bn1 + relu + dropout, mask from the output */
        check_fused(&k, 0.0f, 0, 1);  /* stem: bn + relu */
        check_fused(&k, 0.0f, 1, 0);  /* bn2 + relu + shortcut add, mask recomputed */
        /* p equal to the uniform draw of element 7: kept (dropped means u < p), a threshold
         * off by one would drop it */
        check_fused(&k, lm_uniform01(dropout_key(11, 5, 2), 7), 0, 1);
        free_case(&k);
    }
    CK_AGREE();
}
END_TEST

/* Inference: relu(bn with running statistics) + add, no dropout. */
START_TEST(fused_inference)
{
    bn_case k = make_case(3, 4, 49);
    const bn_dims d = {.n = 3, .c = 4, .hw = 49, .eps = BN_EPS, .momentum = BN_MOMENTUM};
    float *rm = randf(4, -0.5f, 0.5f), *rv = randf(4, 0.5f, 2.0f);
    float *y1 = malloc(k.n * 4), *y2 = malloc(k.n * 4);
    bn_forward_infer(y1, k.x, k.g, k.b, rm, rv, &d);
    relu_forward(y1, y1, k.n);
    for (size_t i = 0; i < k.n; i++)
        y1[i] += k.add[i];
    bn_relu_forward_infer(y2, k.x, k.add, k.g, k.b, rm, rv, &d);
    CK_EXPECT(same(y1, y2, k.n), "fused inference differs from the layers");
    free(rm), free(rv), free(y1), free(y2);
    free_case(&k);
    CK_AGREE();
}
END_TEST

/* Max-pool backward as the plain loop it replaces (pool.c vectorises it with selects): the
 * first input of a window (row-major) equal to the maximum gets += g, the others keep their
 * bits. */
static void ref_maxpool2_backward(float *dx, const float *dy, const float *x, const float *y,
                                  const pool_dims *d)
{
    const int H = d->h, W = d->w, Ho = H / 2, Wo = W / 2;
    for (long pl = 0; pl < (long)d->n * d->c; pl++)
        for (int i = 0; i < Ho; i++)
            for (int j = 0; j < Wo; j++) {
                const size_t o = (size_t)pl * Ho * Wo + (size_t)i * Wo + j;
                const size_t p0 = (size_t)pl * H * W + (size_t)(2 * i) * W + 2 * j;
                const size_t win[4] = {p0, p0 + 1, p0 + W, p0 + W + 1};
                for (int t = 0; t < 4; t++)
                    if (x[win[t]] == y[o]) {
                        dx[win[t]] += dy[o];
                        break;
                    }
            }
}

/* The wrn pools' shapes (16 channels at 28x28, 32 at 14x14; 64 and 160 channels for wrn-16-4)
 * and odd ones (a window left over after the pairs, a dropped last row/column), inputs on a
 * coarse grid so that many windows have tied maxima, dx prefilled (with some -0) as the model
 * leaves it: bit for bit. */
START_TEST(maxpool_backward_equals_reference)
{
    const int shapes[5][4] = {{3, 16, 28, 28}, {2, 32, 14, 14}, {2, 64, 28, 28},
                              {2, 128, 14, 14}, {3, 5, 7, 11}};
    for (int s = 0; s < 5; s++) {
        const pool_dims pd = {
            .n = shapes[s][0], .c = shapes[s][1], .h = shapes[s][2], .w = shapes[s][3]};
        const size_t n = (size_t)pd.n * pd.c * pd.h * pd.w;
        const size_t np = (size_t)pd.n * pd.c * (pd.h / 2) * (pd.w / 2);
        float *x = randf(n, -1, 1), *dy = randf(np, -1, 1), *y = malloc(np * sizeof *y);
        for (size_t i = 0; i < n; i++)
            x[i] = roundf(x[i] * 2.0f) / 2.0f; /* 5 values: ties everywhere */
        float *dx1 = randf(n, -1, 1);
        for (size_t i = 0; i < n; i += 7)
            dx1[i] = -0.0f;
        float *dx2 = copyf(dx1, n);
        maxpool2_forward(y, x, &pd);
        ref_maxpool2_backward(dx1, dy, x, y, &pd);
        maxpool2_backward(dx2, dy, x, y, &pd);
        CK_EXPECT(same(dx1, dx2, n), "maxpool backward (%dx%dx%dx%d) differs from the reference",
                  pd.n, pd.c, pd.h, pd.w);
        free(x), free(dy), free(y), free(dx1), free(dx2);
    }
    CK_AGREE();
}
END_TEST

/* Every threaded layer, run on 1, 2 and 3 threads: identical bits. */
START_TEST(thread_count_does_not_matter)
{
    const int N = 5, C = 7, H = 14, W = 14, HW = H * W;
    bn_case k = make_case(N, C, HW);
    const bn_dims d = {.n = N, .c = C, .hw = HW, .eps = BN_EPS, .momentum = BN_MOMENTUM};
    const pool_dims pd = {.n = N, .c = C, .h = H, .w = W};
    const size_t n = k.n, np = (size_t)N * C * (H / 2) * (W / 2);
    float *ref[6] = {0};
    const char *what[6] = {"bn+relu+dropout forward", "bn+relu backward", "bn backward",
                           "maxpool forward", "maxpool backward", "global average pool"};
    const size_t len[6] = {n, n, n, np, n, (size_t)N * C};
    const int saved = compute_threads();
    for (int threads = 1; threads <= 3; threads++) {
        compute_set_threads(threads);
        float *o[6];
        for (int i = 0; i < 6; i++)
            o[i] = calloc(len[i], sizeof(float));
        float mean[7], istd[7], rm[7] = {0}, rv[7] = {0}, dg[7] = {0}, db[7] = {0};
        bn_relu_forward_train(o[0], k.x, NULL, 0.3f, 77, k.g, k.b, mean, istd, rm, rv, &d);
        bn_relu_backward(o[1], dg, db, k.dout, k.x, o[0], 0.3f, k.g, k.b, mean, istd, &d);
        bn_backward(o[2], dg, db, k.dout, k.x, k.g, mean, istd, &d);
        maxpool2_forward(o[3], k.x, &pd);
        maxpool2_backward(o[4], k.dout, k.x, o[3], &pd);
        gap_forward(o[5], k.x, &pd);
        for (int i = 0; i < 6; i++) {
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
    for (int i = 0; i < 6; i++)
        free(ref[i]);
    free_case(&k);
    CK_AGREE();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fused_layers");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, fused_equals_separate);
    tcase_add_test(tc, fused_inference);
    tcase_add_test(tc, thread_count_does_not_matter);
    tcase_add_test(tc, maxpool_backward_equals_reference);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, suite(), 0); }
