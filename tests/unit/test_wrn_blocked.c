/* test_wrn_blocked.c — a whole WideResNet with its activations in nChw16c (blocked16.h,
 * HVDLAB_ACTIVATION_LAYOUT=nChw16c) against the same model in NCHW, on real Fashion-MNIST
 * images: two training steps (dropout 0.3, so the masks of steps 0 and 1 matter), then
 * inference. Same seed, same weights; compared per step: the loss, the training logits, every
 * gradient view, every running statistic, and the inference logits.
 *
 * The convolutions run the same oneDNN kernels either way; the batch-norm sums are added in
 * another order, so results differ by rounding. Tolerances, err = max |blocked − nchw| / scale
 * (max |nchw| of the tensor):
 *   loss, training and inference logits, running statistics: err <= TOL (measured 1e-7..3e-6);
 *   each gradient view: err <= GRAD_CAP, scale at least 1e-2 of the largest gradient (as
 *   test_wrn.c), and the whole gradient vector: ||blocked − nchw||₂ <= GRAD_L2 · ||nchw||₂.
 * Why gradients get more room: at these random initial weights a pre-activation within ~1e-6
 * of 0 flips its ReLU under any change of rounding, and one such element (one in 300,000 here)
 * moves a few gradient views by up to 2e-2 of their scale; the same NCHW model with the
 * im2col+sgemm convolutions instead of oneDNN's (nothing but another rounding) differs from it
 * by as much (2.8e-2 measured, wrn-16-2 step 1); near-ties of max-pool and of the ReLU after
 * bn2 do the same. Measured here: views up to 2.8e-2, the whole vector up to 9e-4 of its norm.
 * A wrong mask, index or layout moves gradients by O(1) of their scale.
 *
 * Also: the layout auto picks (printed; nChw16c exactly where oneDNN prefers it for every conv
 * of the model, its AVX-512 kernels), nchw giving NCHW, and another value warning, then auto.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/dataset.h"
#include "lib/ck_mpi.h"
#include "model/wrn.h"
#include "model/wrn_internal.h" /* white box: the training logits */
#include "nn/conv2d.h"
#ifdef HVDLAB_DNNL
#include "nn/conv2d_dnnl.h"
#endif

#define TOL 1e-4
#define GRAD_CAP 5e-2
#define GRAD_L2 1e-2
#define B 96 /* several pieces of the batch in every conv (conv2d_dnnl.c) */

static wrn_model *make(const char *name, const char *layout)
{
    char err[256];
    wrn_config cfg = {.dropout = 0.3f};
    ck_assert_msg(wrn_config_parse(name, &cfg, err, sizeof err) == 0, "%s", err);
    setenv("HVDLAB_ACTIVATION_LAYOUT", layout, 1);
    wrn_model *m = wrn_create(&cfg, B, 77, err, sizeof err);
    unsetenv("HVDLAB_ACTIVATION_LAYOUT");
    ck_assert_msg(m != NULL, "%s", err);
    return m;
}

#ifdef HVDLAB_DNNL /* blocked activations exist on the oneDNN path only */
static float x[B * DATASET_PIXELS];
static int y[B];

/* The first B test images, standardised as the lab does (roughly: mean 0.286, sd 0.353). */
static void load_batch(void)
{
    char dir[DATASET_PATHLEN], err[1024];
    ck_assert_msg(dataset_locate("", dir, sizeof dir, err, sizeof err) == 0, "%s", err);
    dataset_split s;
    ck_assert_msg(dataset_load_split(dir, "t10k", &s, err, sizeof err) == 0, "%s", err);
    for (size_t i = 0; i < (size_t)B * DATASET_PIXELS; i++)
        x[i] = ((float)s.images[i] / 255.0f - 0.286f) / 0.353f;
    for (int i = 0; i < B; i++)
        y[i] = s.labels[i];
    dataset_free_split(&s);
}

static double max_abs(const float *a, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s = fmax(s, fabs((double)a[i]));
    return s;
}

/* max |a − ref| / max(max |ref|, floor). */
static double err_of(const float *a, const float *ref, size_t n, double floor)
{
    double e = 0;
    for (size_t i = 0; i < n; i++)
        e = fmax(e, fabs((double)a[i] - ref[i]));
    const double s = fmax(max_abs(ref, n), floor);
    return s > 0 ? e / s : e;
}

/* ||a − ref||₂ / ||ref||₂ */
static double l2_of(const float *a, const float *ref, size_t n)
{
    double e = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        e += ((double)a[i] - ref[i]) * ((double)a[i] - ref[i]);
        s += (double)ref[i] * ref[i];
    }
    return s > 0 ? sqrt(e / s) : sqrt(e);
}

/* Every view of a (blocked) against r (NCHW) within tol; the worst error. */
static double compare_views(const float *a, const float *r, const param_view *v, int nv,
                            double floor, double tol, const char *what, const char *model,
                            int step)
{
    double worst = 0;
    for (int i = 0; i < nv; i++) {
        const double e = err_of(a + v[i].offset, r + v[i].offset, v[i].count, floor);
        CK_EXPECT(e <= tol, "%s step %d: %s %s differs by %.2g of its scale (tolerance %g)", model,
                  step, what, v[i].name, e, tol);
        worst = fmax(worst, e);
    }
    return worst;
}

static void check_model(const char *name)
{
    wrn_model *ref = make(name, "nchw"), *blk = make(name, "nChw16c");
    CK_EXPECT(strcmp(wrn_activation_layout(ref), "nchw") == 0, "nchw model is %s",
              wrn_activation_layout(ref));
    CK_EXPECT(strcmp(wrn_activation_layout(blk), "nChw16c") == 0, "blocked model is %s",
              wrn_activation_layout(blk));
    param_set *pr = wrn_params(ref), *pb = wrn_params(blk);
    for (int step = 0; step < 2; step++) {
        const wrn_result rr = wrn_train_batch(ref, x, y, B, 5e-4f);
        const wrn_result rb = wrn_train_batch(blk, x, y, B, 5e-4f);
        const double el = fabs(rb.loss - rr.loss) / rr.loss;
        CK_EXPECT(el <= TOL, "%s step %d: loss %.9g vs %.9g", name, step, rb.loss, rr.loss);
        const double elog = err_of(blk->logits, ref->logits, (size_t)B * WRN_CLASSES, 0);
        CK_EXPECT(elog <= TOL, "%s step %d: training logits differ by %.2g", name, step, elog);
        const double gfloor = 1e-2 * max_abs(pr->grads, pr->n);
        const double eg = compare_views(pb->grads, pr->grads, pr->views, pr->nviews, gfloor,
                                        GRAD_CAP, "gradient", name, step);
        const double e2 = l2_of(pb->grads, pr->grads, pr->n);
        CK_EXPECT(e2 <= GRAD_L2, "%s step %d: the gradient vector differs by %.2g of its norm "
                  "(tolerance %g)", name, step, e2, GRAD_L2);
        const double es = compare_views(pb->state, pr->state, pr->state_views, pr->n_state_views,
                                        0, TOL, "running statistic", name, step);
        printf("  %s step %d: loss %.7f vs %.7f (nchw), logits %.1e, running statistics %.1e, "
               "gradient views %.1e, gradient norm %.1e\n", name, step, rb.loss, rr.loss, elog,
               es, eg, e2);
        /* the same small update on both (from the NCHW gradients), so step 1 starts equal */
        for (size_t i = 0; i < pr->n; i++)
            pr->params[i] -= 0.05f * pr->grads[i];
        memcpy(pb->params, pr->params, pr->n * sizeof(float));
    }
    float lr[B * WRN_CLASSES], lb[B * WRN_CLASSES];
    wrn_eval_batch(ref, x, y, B, lr);
    wrn_eval_batch(blk, x, y, B, lb);
    const double ei = err_of(lb, lr, (size_t)B * WRN_CLASSES, 0);
    CK_EXPECT(ei <= TOL, "%s: inference logits differ by %.2g", name, ei);
    printf("  %s inference: logits %.1e\n", name, ei);
    wrn_free(ref), wrn_free(blk);
}

START_TEST(blocked_step_matches_nchw)
{
    CK_EXPECT(conv2d_set_backend("dnnl") == 0, "no dnnl backend in this build");
    load_batch();
    check_model("wrn-16-1");
    check_model("wrn-16-2");
    CK_AGREE();
}
END_TEST
#endif

/* What auto picks here, and nchw forcing NCHW. */
START_TEST(layout_choice)
{
    wrn_model *a = make("wrn-10-1", "auto"), *n = make("wrn-10-1", "nchw");
    wrn_model *bogus = make("wrn-10-1", "nChw8c"); /* a warning on stderr, then auto */
    CK_EXPECT(strcmp(wrn_activation_layout(bogus), wrn_activation_layout(a)) == 0,
              "HVDLAB_ACTIVATION_LAYOUT=nChw8c gave %s, auto %s", wrn_activation_layout(bogus),
              wrn_activation_layout(a));
    wrn_free(bogus);
    /* nhwc is a GPU model's layout: on the CPU a warning, then auto */
    wrn_model *gpu_only = make("wrn-10-1", "nhwc");
    CK_EXPECT(strcmp(wrn_activation_layout(gpu_only), wrn_activation_layout(a)) == 0,
              "HVDLAB_ACTIVATION_LAYOUT=nhwc on the CPU gave %s, auto %s",
              wrn_activation_layout(gpu_only), wrn_activation_layout(a));
    wrn_free(gpu_only);
    printf("  this machine, %s backend: HVDLAB_ACTIVATION_LAYOUT=auto gives %s\n",
           conv2d_backend(), wrn_activation_layout(a));
#ifdef HVDLAB_DNNL
    /* auto = blocked exactly where oneDNN's kernels take nChw16c (wrn-10-1's convs) */
    int want = strcmp(conv2d_backend(), "dnnl") == 0;
    const int shapes[6][4] = {{16, 16, 28, 3}, {16, 32, 14, 3}, {32, 32, 14, 3},
                              {16, 32, 14, 1}, {32, 64, 7, 3},  {64, 64, 7, 3}};
    for (int i = 0; i < 6 && want; i++) {
        const conv2d_dims d = {.n = B, .cin = shapes[i][0], .cout = shapes[i][1],
                               .h = shapes[i][2], .w = shapes[i][2], .k = shapes[i][3]};
        want = conv2d_dnnl_prefers_nchw16c(&d);
    }
    CK_EXPECT(strcmp(wrn_activation_layout(a), want ? "nChw16c" : "nchw") == 0,
              "auto gave %s where oneDNN %s nChw16c", wrn_activation_layout(a),
              want ? "prefers" : "does not prefer");
#endif
    CK_EXPECT(strcmp(wrn_activation_layout(n), "nchw") == 0, "nchw gave %s",
              wrn_activation_layout(n));
    wrn_free(a), wrn_free(n);
    CK_AGREE();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("wrn_blocked");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, layout_choice);
#ifdef HVDLAB_DNNL
    tcase_add_test(tc, blocked_step_matches_nchw);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, suite(), 0); }
