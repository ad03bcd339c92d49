/* test_conv_backends.c — the oneDNN convolution (conv2d_dnnl.c) against the im2col + OpenBLAS
 * reference (conv2d_gemm_*, conv2d.c) on every conv shape of wrn-16-1, wrn-16-4 and wrn-16-10,
 * and the dispatcher (conv2d_forward/backward follow conv2d_set_backend); conv2d_backward_set
 * (din overwritten) against zeroing din and adding, on both backends.
 *
 * Method: random inputs, weights, bias and output gradients in ranges that tell positions apart;
 * both paths run forward (with and without bias) and backward with din, dw, db starting from
 * the same random non-zero values (backward must add to them), and with each of them NULL.
 * Tolerance: both are float32 with different summation orders (oneDNN's blocked kernels vs
 * OpenBLAS), so the gap grows with the reduction length (Cin·k·k up to 5760, N·H·W up to 2352):
 * max |dnnl − gemm| ≤ 2e-5 · max |gemm result − start value| per tensor (the worst seen is
 * printed; it is ~1e-6 here). Batch 3 (odd, so no batch blocking hides a missing image),
 * batch 17 for wrn-16-1's shapes, and batch 17 cut into pieces of 5 images (the oneDNN path
 * runs the batch piece by piece). The same under HVDLAB_CONV_ALGO=auto (Winograd): auto_algo.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/ck_mpi.h"
#include "lib/fill.h"
#include "nn/conv2d.h"
#include "nn/layer_math.h"
#ifdef HVDLAB_DNNL
#include "nn/conv2d_dnnl.h"
#endif

#define TOL 2e-5

/* The backends this build has, the default last. */
#ifdef HVDLAB_DNNL
static const char *const backends[] = {"gemm", "dnnl"};
#else
static const char *const backends[] = {"gemm"};
#endif
#define NBACKENDS ((int)(sizeof backends / sizeof backends[0]))

static uint64_t rng = 777;

static float *randf(size_t n, float lo, float hi) { return rand_floats(&rng, n, lo, hi); }

static float *copyf(const float *a, size_t n)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    memcpy(x, a, n * sizeof *x);
    return x;
}

#ifdef HVDLAB_DNNL

static double worst_seen;

/* max |a − b| / max |b − start| (start may be NULL: 0). */
static double rel_err(const float *a, const float *b, const float *start, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]);
        double m = fabs((double)b[i] - (start ? start[i] : 0.0));
        num = e > num ? e : num;
        den = m > den ? m : den;
    }
    double r = den > 0 ? num / den : num;
    if (r > worst_seen)
        worst_seen = r;
    return r;
}

#endif

typedef struct {
    int cin, cout, hw, k;
} shape;

/* Distinct conv shapes of wrn-16-K. */
static int wrn_shapes(int K, shape *out)
{
    int n = 0, cin = 16, hw = 28;
    out[n++] = (shape){1, 16, 28, 3};
    for (int g = 0; g < 3; g++) {
        int w = (16 * K) << g;
        shape s[3] = {{cin, w, hw, 3}, {w, w, hw, 3}, {cin, w, hw, 1}};
        for (int i = 0; i < 3; i++) {
            if (i == 2 && cin == w)
                continue;
            int dup = 0;
            for (int j = 0; j < n; j++)
                dup |= !memcmp(&out[j], &s[i], sizeof s[i]);
            if (!dup)
                out[n++] = s[i];
        }
        cin = w;
        if (g < 2)
            hw /= 2;
    }
    return n;
}

#ifdef HVDLAB_DNNL
/* bf16_shapes: the products' inputs rounded to bf16 (8 bits of mantissa: 2^-9 relative each),
 * sums in f32; the worst seen is printed (~3e-3 here). */
#define TOL_BF16 1.5e-2
static double tol = TOL; /* compare_shape's */

/* Both paths on one shape; returns the number of failed comparisons. */
static int compare_shape(const shape *s, int N)
{
    conv2d_dims d = {.n = N, .cin = s->cin, .h = s->hw, .w = s->hw, .cout = s->cout, .k = s->k};
    const size_t nin = (size_t)N * s->cin * s->hw * s->hw, nout = (size_t)N * s->cout * s->hw * s->hw;
    const size_t nw = (size_t)s->cout * s->cin * s->k * s->k;
    size_t wf = conv2d_gemm_work_floats(&d), wd = conv2d_dnnl_work_floats(&d);
    float *work = malloc((wf > wd ? wf : wd) * sizeof(float) + 64);
    float *in = randf(nin, -1, 1), *w = randf(nw, -0.5f, 0.5f), *b = randf(s->cout, -1, 1);
    float *dout = randf(nout, -1, 1);
    float *o_ref = randf(nout, 5, 6), *o_dn = randf(nout, 7, 8); /* forward overwrites */
    int fails = 0;
    char what[160];
    snprintf(what, sizeof what, "conv %dx%d %d->%d on %dx%d, batch %d", s->k, s->k, s->cin,
             s->cout, s->hw, s->hw, N);

    for (int with_bias = 0; with_bias < 2; with_bias++) {
        conv2d_gemm_forward(o_ref, in, w, with_bias ? b : NULL, &d, work);
        conv2d_dnnl_forward(o_dn, in, w, with_bias ? b : NULL, &d, work);
        double e = rel_err(o_dn, o_ref, NULL, nout);
        if (!(e <= tol)) {
            fails++;
            CK_EXPECT(0, "%s forward%s: relative error %.3g > %g", what,
                      with_bias ? "" : " (no bias)", e, tol);
        }
    }

    /* Backward: all three gradients, then each alone (the others NULL). */
    float *din0 = randf(nin, -0.25f, 0.25f), *dw0 = randf(nw, -0.25f, 0.25f),
          *db0 = randf(s->cout, -0.25f, 0.25f);
    static const int masks[4] = {7, 4, 2, 1}; /* bit 4: din, 2: dw, 1: db */
    for (int mi = 0; mi < 4; mi++) {
        const int mask = masks[mi];
        const int want_din = (mask & 4) && s->cin > 1, want_dw = mask & 2, want_db = mask & 1;
        float *din_r = copyf(din0, nin), *dw_r = copyf(dw0, nw), *db_r = copyf(db0, s->cout);
        float *din_d = copyf(din0, nin), *dw_d = copyf(dw0, nw), *db_d = copyf(db0, s->cout);
        conv2d_gemm_backward(want_din ? din_r : NULL, want_dw ? dw_r : NULL,
                             want_db ? db_r : NULL, dout, in, w, &d, work);
        conv2d_dnnl_backward(want_din ? din_d : NULL, want_dw ? dw_d : NULL,
                             want_db ? db_d : NULL, dout, in, w, &d, work);
        const struct {
            const char *name;
            int on;
            float *a, *r, *start;
            size_t n;
        } t[3] = {{"din", want_din, din_d, din_r, din0, nin},
                  {"dw", want_dw, dw_d, dw_r, dw0, nw},
                  {"db", want_db, db_d, db_r, db0, (size_t)s->cout}};
        for (int i = 0; i < 3; i++) {
            if (!t[i].on) { /* a NULL argument: our copy must be untouched */
                if (memcmp(t[i].a, t[i].start, t[i].n * sizeof(float)) != 0) {
                    fails++;
                    CK_EXPECT(0, "%s backward mask %d: %s changed though not asked for", what,
                              mask, t[i].name);
                }
                continue;
            }
            double e = rel_err(t[i].a, t[i].r, t[i].start, t[i].n);
            if (!(e <= tol)) {
                fails++;
                CK_EXPECT(0, "%s backward mask %d: %s relative error %.3g > %g", what, mask,
                          t[i].name, e, tol);
            }
        }
        free(din_r), free(dw_r), free(db_r), free(din_d), free(dw_d), free(db_d);
    }
    free(din0), free(dw0), free(db0);
    free(work), free(in), free(w), free(b), free(dout), free(o_ref), free(o_dn);
    return fails;
}

static void run_model(int K, int N)
{
    shape s[16];
    int ns = wrn_shapes(K, s), fails = 0;
    for (int i = 0; i < ns; i++)
        fails += compare_shape(&s[i], N);
    printf("test_conv_backends: wrn-16-%d shapes at batch %d: %d shapes, %d failures, worst "
           "relative error so far %.2g\n", K, N, ns, fails, worst_seen);
    CK_AGREE();
}

START_TEST(wrn16_1_shapes) { run_model(1, 3); run_model(1, 17); }
END_TEST

/* The batch in pieces of 5 images (17 = 5 + 5 + 5 + 2): every piece lands at its offset, dW and
 * db add up over the pieces, the remainder piece has its own primitives. */
START_TEST(batch_in_pieces)
{
    conv2d_dnnl_set_chunk(5);
    const shape s[3] = {{16, 32, 14, 3}, {32, 64, 7, 1}, {1, 16, 28, 3}};
    int fails = 0;
    for (int i = 0; i < 3; i++)
        fails += compare_shape(&s[i], 17);
    conv2d_dnnl_set_chunk(0);
    printf("test_conv_backends: batch 17 in pieces of 5: %d failures\n", fails);
    CK_AGREE();
}
END_TEST

/* Same inputs, same thread count: the same bits, run after run (oneDNN splits the work the same
 * way every time; the batch pieces' dW are added in a fixed order). */
START_TEST(repeatable)
{
    conv2d_dims d = {.n = 19, .cin = 32, .h = 14, .w = 14, .cout = 32, .k = 3};
    conv2d_dnnl_set_chunk(4);
    const size_t nin = (size_t)19 * 32 * 196, nw = 32 * 32 * 9;
    float *work = malloc(conv2d_dnnl_work_floats(&d) * sizeof(float) + 64);
    float *in = randf(nin, -1, 1), *w = randf(nw, -1, 1), *b = randf(32, -1, 1);
    float *dout = randf(nin, -1, 1);
    float *out[2], *din[2], *dw[2], *db[2];
    for (int r = 0; r < 2; r++) {
        out[r] = calloc(nin, sizeof(float)), din[r] = calloc(nin, sizeof(float));
        dw[r] = calloc(nw, sizeof(float)), db[r] = calloc(32, sizeof(float));
        conv2d_dnnl_forward(out[r], in, w, b, &d, work);
        conv2d_dnnl_backward(din[r], dw[r], db[r], dout, in, w, &d, work);
    }
    CK_EXPECT(memcmp(out[0], out[1], nin * sizeof(float)) == 0, "forward differs between runs");
    CK_EXPECT(memcmp(din[0], din[1], nin * sizeof(float)) == 0, "din differs between runs");
    CK_EXPECT(memcmp(dw[0], dw[1], nw * sizeof(float)) == 0, "dw differs between runs");
    CK_EXPECT(memcmp(db[0], db[1], 32 * sizeof(float)) == 0, "db differs between runs");
    conv2d_dnnl_set_chunk(0);
    for (int r = 0; r < 2; r++)
        free(out[r]), free(din[r]), free(dw[r]), free(db[r]);
    free(work), free(in), free(w), free(b), free(dout);
    CK_AGREE();
}
END_TEST

START_TEST(wrn16_4_shapes) { run_model(4, 3); }
END_TEST

/* HVDLAB_CONV_ALGO=auto (conv2d_dnnl_set_algo): Winograd on the forward and backward-data passes
 * of the 3x3 layers with 32+ input channels. The same tolerance against the reference as direct
 * on every shape of wrn-16-1 and wrn-16-4 (Winograd's transforms round differently, but its worst
 * error here is ~4e-6, like direct's); its results are not direct's bits (so Winograd did run:
 * plans are kept per setting), and are the same bits run after run. */
START_TEST(auto_algo)
{
    const char *before = conv2d_dnnl_algo(); /* auto (the default), or HVDLAB_CONV_ALGO's */
    CK_EXPECT(conv2d_dnnl_set_algo("winograd") == -1 && strcmp(conv2d_dnnl_algo(), before) == 0,
              "an unknown algorithm name was accepted or changed the setting");
    conv2d_dims d = {.n = 19, .cin = 32, .h = 14, .w = 14, .cout = 32, .k = 3};
    const size_t n = (size_t)19 * 32 * 196, nw = 32 * 32 * 9;
    float *work = malloc(conv2d_dnnl_work_floats(&d) * sizeof(float) + 64);
    float *in = randf(n, -1, 1), *w = randf(nw, -1, 1), *b = randf(32, -1, 1);
    float *dout = randf(n, -1, 1);
    float *out[3], *din[3], *dw[3], *db[3]; /* direct, auto, auto again */
    for (int r = 0; r < 3; r++) {
        CK_EXPECT(conv2d_dnnl_set_algo(r ? "auto" : "direct") == 0, "set_algo refused");
        out[r] = calloc(n, sizeof(float)), din[r] = calloc(n, sizeof(float));
        dw[r] = calloc(nw, sizeof(float)), db[r] = calloc(32, sizeof(float));
        conv2d_dnnl_forward(out[r], in, w, b, &d, work);
        conv2d_dnnl_backward_set(din[r], dw[r], db[r], dout, in, w, &d, work);
    }
    CK_EXPECT(strcmp(conv2d_dnnl_algo(), "auto") == 0, "conv2d_dnnl_algo() is %s, not auto",
              conv2d_dnnl_algo());
    CK_EXPECT(memcmp(out[0], out[1], n * sizeof(float)) != 0,
              "auto's forward has direct's bits: Winograd did not run");
    CK_EXPECT(memcmp(din[0], din[1], n * sizeof(float)) != 0,
              "auto's din has direct's bits: Winograd did not run");
    CK_EXPECT(memcmp(out[1], out[2], n * sizeof(float)) == 0, "auto: forward differs between runs");
    CK_EXPECT(memcmp(din[1], din[2], n * sizeof(float)) == 0, "auto: din differs between runs");
    CK_EXPECT(memcmp(dw[1], dw[2], nw * sizeof(float)) == 0, "auto: dw differs between runs");
    for (int r = 0; r < 3; r++)
        free(out[r]), free(din[r]), free(dw[r]), free(db[r]);
    free(work), free(in), free(w), free(b), free(dout);
    run_model(1, 3); /* auto */
    run_model(1, 17);
    run_model(4, 3);
    CK_EXPECT(conv2d_dnnl_set_algo("direct") == 0, "set_algo refused");
    run_model(1, 3); /* and direct, whichever is the default */
    run_model(4, 3);
    conv2d_dnnl_set_algo(before);
}
END_TEST

START_TEST(wrn16_10_shapes) { run_model(10, 3); }
END_TEST

/* --precision bf16 on the CPU (conv2d_dnnl_set_bf16): every shape within TOL_BF16 of the f32
 * reference, batch 3 and 17 in pieces of 5, and not f32's bits (the rounding did happen: a
 * switch that changed nothing would pass the tolerance). Where oneDNN has no native bf16 on this
 * CPU the build refuses --precision bf16, and this says it skipped. */
START_TEST(bf16_shapes)
{
    if (!conv2d_dnnl_bf16_native()) {
        printf("test_conv_backends: bf16_shapes skipped: no AVX512_BF16 or AMX on this CPU\n");
        return;
    }
    conv2d_dims d = {.n = 3, .cin = 16, .h = 14, .w = 14, .cout = 32, .k = 3};
    const size_t ni = (size_t)3 * 16 * 196, no = (size_t)3 * 32 * 196;
    float *work = malloc(conv2d_dnnl_work_floats(&d) * sizeof(float) + 64);
    float *in = randf(ni, -1, 1), *w = randf(32 * 16 * 9, -0.5f, 0.5f);
    float *o32 = calloc(no, sizeof(float)), *o16 = calloc(no, sizeof(float));
    conv2d_dnnl_forward(o32, in, w, NULL, &d, work);
    conv2d_dnnl_set_bf16(1);
    free(work); /* the bf16 plan's workspace is its own size */
    work = malloc(conv2d_dnnl_work_floats(&d) * sizeof(float) + 64);
    conv2d_dnnl_forward(o16, in, w, NULL, &d, work);
    const double off = rel_err(o16, o32, NULL, no);
    CK_EXPECT(off > 1e-5, "bf16 forward within %.3g of f32's: nothing was rounded to bf16", off);
    worst_seen = 0;
    tol = TOL_BF16;
    conv2d_dnnl_set_chunk(5);
    run_model(1, 17);
    conv2d_dnnl_set_chunk(0);
    run_model(1, 3);
    run_model(4, 3);
    tol = TOL;
    conv2d_dnnl_set_bf16(0);
    free(work), free(in), free(w), free(o32), free(o16);
    CK_AGREE();
}
END_TEST


#endif

/* conv2d_forward/backward run the selected backend: with "dnnl" selected they equal the oneDNN
 * functions bit for bit, with "gemm" the reference bit for bit; a name the build lacks is
 * refused and leaves the backend as it was. */
START_TEST(dispatch_follows_backend)
{
    conv2d_dims d = {.n = 2, .cin = 16, .h = 14, .w = 14, .cout = 32, .k = 3};
    const size_t nin = (size_t)2 * 16 * 196, nout = (size_t)2 * 32 * 196, nw = 32 * 16 * 9;
    float *work = malloc(conv2d_work_floats(&d) * sizeof(float) + 64);
    float *in = randf(nin, -1, 1), *w = randf(nw, -1, 1), *b = randf(32, -1, 1);
    float *o1 = calloc(nout, sizeof(float)), *o2 = calloc(nout, sizeof(float));
#ifndef HVDLAB_DNNL
    CK_EXPECT(conv2d_set_backend("dnnl") != 0, "a build without oneDNN accepted \"dnnl\"");
#endif
    for (int i = 0; i < NBACKENDS; i++) {
        CK_EXPECT(conv2d_set_backend(backends[i]) == 0, "conv2d_set_backend(%s) failed",
                  backends[i]);
        CK_EXPECT(strcmp(conv2d_backend(), backends[i]) == 0, "backend is %s, not %s",
                  conv2d_backend(), backends[i]);
        conv2d_forward(o1, in, w, b, &d, work);
#ifdef HVDLAB_DNNL
        if (i == 1)
            conv2d_dnnl_forward(o2, in, w, b, &d, work);
        else
#endif
            conv2d_gemm_forward(o2, in, w, b, &d, work);
        CK_EXPECT(memcmp(o1, o2, nout * sizeof(float)) == 0,
                  "conv2d_forward with backend %s differs from that backend's own function",
                  backends[i]);
    }
    CK_EXPECT(conv2d_set_backend("cudnn") != 0, "an unknown backend name was accepted");
    CK_EXPECT(strcmp(conv2d_backend(), backends[NBACKENDS - 1]) == 0,
              "a refused name changed the backend");
    free(work), free(in), free(w), free(b), free(o1), free(o2);
    CK_AGREE();
}
END_TEST

/* conv2d_backward_set (din overwritten) gives the values of zeroing din and calling
 * conv2d_backward (== per element: the adding path turns a -0 into +0), and the same dW and db
 * bits, on every conv shape of wrn-16-1 and wrn-16-4 (the stem's 1-channel din included: oneDNN
 * writes it in NCHW directly) with each backend, the batch whole and cut into pieces. din starts
 * as garbage: whatever was there must not leak through. */
START_TEST(backward_set_equals_zero_then_add)
{
    shape shapes[32];
    int ns = wrn_shapes(1, shapes);
    ns += wrn_shapes(4, shapes + ns);
    for (int bi = 0; bi < NBACKENDS; bi++) {
        CK_EXPECT(conv2d_set_backend(backends[bi]) == 0, "conv2d_set_backend(%s) failed",
                  backends[bi]);
        for (int chunk = 0; chunk < 2; chunk++) {
#ifdef HVDLAB_DNNL
            conv2d_dnnl_set_chunk(chunk ? 5 : 0);
#endif
            for (int i = 0; i < ns; i++) {
                const shape *sh = &shapes[i];
                const int N = 7;
                conv2d_dims d = {.n = N, .cin = sh->cin, .h = sh->hw, .w = sh->hw,
                                 .cout = sh->cout, .k = sh->k};
                const size_t nin = (size_t)N * sh->cin * sh->hw * sh->hw;
                const size_t nout = (size_t)N * sh->cout * sh->hw * sh->hw;
                const size_t nw = (size_t)sh->cout * sh->cin * sh->k * sh->k;
                float *work = malloc(conv2d_work_floats(&d) * sizeof(float) + 64);
                float *in = randf(nin, -1, 1), *w = randf(nw, -0.5f, 0.5f);
                float *dout = randf(nout, -1, 1), *dw0 = randf(nw, -0.25f, 0.25f);
                float *db0 = randf(sh->cout, -0.25f, 0.25f);
                float *din_a = calloc(nin, sizeof(float)), *din_s = randf(nin, 5, 6);
                float *dw_a = copyf(dw0, nw), *dw_s = copyf(dw0, nw);
                float *db_a = copyf(db0, sh->cout), *db_s = copyf(db0, sh->cout);
                conv2d_backward(din_a, dw_a, db_a, dout, in, w, &d, work);
                conv2d_backward_set(din_s, dw_s, db_s, dout, in, w, &d, work);
                size_t bad = 0;
                for (size_t j = 0; j < nin; j++)
                    bad += din_a[j] != din_s[j];
                CK_EXPECT(bad == 0 && !memcmp(dw_a, dw_s, nw * sizeof(float)) &&
                              !memcmp(db_a, db_s, sh->cout * sizeof(float)),
                          "%s, conv %dx%d %d->%d on %dx%d%s: backward_set differs from zero + "
                          "backward (%zu of %zu din values)",
                          backends[bi], sh->k, sh->k, sh->cin, sh->cout, sh->hw, sh->hw,
                          chunk ? ", pieces of 5" : "", bad, nin);
                free(work), free(in), free(w), free(dout), free(dw0), free(db0), free(din_a);
                free(din_s), free(dw_a), free(dw_s), free(db_a), free(db_s);
            }
        }
    }
#ifdef HVDLAB_DNNL
    conv2d_dnnl_set_chunk(0);
#endif
    conv2d_set_backend(backends[NBACKENDS - 1]);
    CK_AGREE();
}
END_TEST

START_TEST(shapes_listed)
{
    shape s[16];
    /* wrn-16-1: stem, 16>16, 16>32, 32>32, 16>32 1x1, 32>64, 64>64, 32>64 1x1 */
    CK_EXPECT(wrn_shapes(1, s) == 8, "wrn-16-1 has %d distinct conv shapes, expected 8",
              wrn_shapes(1, s));
    /* wrn-16-4: stem, then per group conv1, conv2 and the 1x1 shortcut (width changes in all 3) */
    CK_EXPECT(wrn_shapes(4, s) == 10, "wrn-16-4 has %d distinct conv shapes, expected 10",
              wrn_shapes(4, s));
    CK_AGREE();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("conv_backends");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, shapes_listed);
    tcase_add_test(tc, dispatch_follows_backend);
    tcase_add_test(tc, backward_set_equals_zero_then_add);
#ifdef HVDLAB_DNNL
    tcase_add_test(tc, wrn16_1_shapes);
    tcase_add_test(tc, batch_in_pieces);
    tcase_add_test(tc, repeatable);
    tcase_add_test(tc, wrn16_4_shapes);
    tcase_add_test(tc, wrn16_10_shapes);
    tcase_add_test(tc, auto_algo);
#ifdef HVDLAB_DNNL
    tcase_add_test(tc, bf16_shapes);
#endif
#else
    printf("test_conv_backends: built without oneDNN (libdnnl-dev): only the GEMM path exists\n");
#endif
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, suite(), 0); }
