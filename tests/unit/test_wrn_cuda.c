/* test_wrn_cuda.c — the whole WideResNet on the GPU against the same model on the CPU.
 *
 * Needs a CUDA build and a visible GPU; without one it prints "skipped: no GPU (reason)" and
 * exits 77 (counted as skipped), by the rule of test_twins_cuda.c: 77 only when there is no GPU
 * to use, 1 when a GPU is there but CUDA cannot use it. TF32 is off.
 *
 * Two models from one seed, one built with compute_device_set(-1) (CPU) and one with
 * compute_device_set(0) (GPU), fed the same batches. Tolerances are relative to each tensor's
 * scale (max |gpu − cpu| <= tol · max |cpu|, per named view):
 *   one training step of wrn-16-2: loss 1e-4, logits (inference after the step) 1e-3, every
 *   gradient view 2e-3 (16 layers of sums in another order), BN running statistics 1e-4;
 *   20 SGD steps and 20 NovoGrad steps: every weight view 2e-3 of its scale;
 *   dropout (p 0.3): r1 of every block is zero at the same places wherever either side's value
 *   is clearly away from zero (the mask bits are the CPU's: test_twins_cuda checks them exactly);
 *   a checkpoint written by the GPU model loads into a CPU model with the same bits and the two
 *   continue the same run (3 more SGD steps within 2e-3), and back.
 */
#include <stdio.h>
#include <stdlib.h>

#include "lib/gpu_skip.h"

#ifdef HVDLAB_CUDA

#include <cuda_runtime_api.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "base/compute_device.h"
#include "ckpt/ckpt.h"
#include "lib/ck_mpi.h"
#include "lib/tmpdir.h"
#include "model/wrn_internal.h"
#include "nn/gpu_context.h"
#include "nn/layer_math.h"
#include "optim/optim.h"

#define NB 16
#define PIX (28 * 28)

static uint64_t rng = 20251123;

static void batch(float *x, int *y)
{
    for (size_t i = 0; i < (size_t)NB * PIX; i++)
        x[i] = (float)((lm_splitmix64(&rng) >> 40) * 0x1.0p-24) * 4.0f - 2.0f;
    for (int i = 0; i < NB; i++)
        y[i] = (int)(lm_splitmix64(&rng) % WRN_CLASSES);
}

static wrn_model *model(int gpu, float dropout)
{
    wrn_config cfg = {.depth = 16, .width = 2, .dropout = dropout};
    char err[256];
    compute_device_set(gpu ? 0 : -1);
    wrn_model *m = wrn_create(&cfg, NB, 7, err, sizeof err);
    compute_device_set(-1);
    ck_assert_msg(m != NULL, "%s", err);
    ck_assert_int_eq(wrn_params(m)->device, gpu);
    return m;
}

static float *host(const float *buf, size_t n, int device)
{
    float *h = malloc((n ? n : 1) * sizeof *h);
    params_to_host(h, buf, n, device);
    return h;
}

static double rel_err(const float *got, const float *ref, size_t n)
{
    double e = 0.0, scale = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)got[i] - ref[i]);
        e = d > e || d != d ? d : e;
        scale = fabs(ref[i]) > scale ? fabs(ref[i]) : scale;
    }
    return scale > 0.0 ? e / scale : e;
}

/* Every view of which (0 params, 1 grads, 2 state) within tol of its CPU scale; tol < 0: bits. */
static void expect_views(const char *what, wrn_model *g, wrn_model *c, int which, double tol)
{
    param_set *pg = wrn_params(g), *pc = wrn_params(c);
    const float *bg = which == 0 ? pg->params : which == 1 ? pg->grads : pg->state;
    const float *bc = which == 0 ? pc->params : which == 1 ? pc->grads : pc->state;
    const size_t n = which == 2 ? pc->n_state : pc->n;
    const param_view *v = which == 2 ? pc->state_views : pc->views;
    const int nv = which == 2 ? pc->n_state_views : pc->nviews;
    float *h = host(bg, n, pg->device);
    for (int t = 0; t < nv; t++) {
        const float *a = h + v[t].offset, *r = bc + v[t].offset;
        if (tol < 0) {
            ck_assert_msg(memcmp(a, r, v[t].count * sizeof *a) == 0, "%s %s: bits differ", what,
                          v[t].name);
            continue;
        }
        const double e = rel_err(a, r, v[t].count);
        ck_assert_msg(e <= tol, "%s %s: error %.3g of scale > %.3g", what, v[t].name, e, tol);
    }
    free(h);
}

START_TEST(train_step_matches_cpu)
{
    wrn_model *g = model(1, 0.01f), *c = model(0, 0.01f);
    expect_views("initial weights", g, c, 0, -1.0);
    float *x = malloc((size_t)NB * PIX * sizeof *x);
    int y[NB];
    batch(x, y);
    const wrn_result rg = wrn_train_batch(g, x, y, NB, 5e-4f);
    const wrn_result rc = wrn_train_batch(c, x, y, NB, 5e-4f);
    ck_assert_msg(fabs(rg.loss - rc.loss) <= 1e-4 * fabs(rc.loss), "loss gpu %.9g cpu %.9g",
                  rg.loss, rc.loss);
    ck_assert_int_eq(rg.count, rc.count);
    expect_views("gradient", g, c, 1, 2e-3);
    expect_views("running statistics", g, c, 2, 1e-4);
    float lg[NB * WRN_CLASSES], lc[NB * WRN_CLASSES];
    wrn_eval_batch(g, x, y, NB, lg);
    wrn_eval_batch(c, x, y, NB, lc);
    const double e = rel_err(lg, lc, NB * WRN_CLASSES);
    ck_assert_msg(e <= 1e-3, "logits: error %.3g of scale", e);
    free(x);
    wrn_free(g);
    wrn_free(c);
}
END_TEST

static optimizer *make_opt(wrn_model *m, int kind)
{
    if (kind == OPT_NOVOGRAD) {
        novograd_options o = novograd_defaults();
        o.weight_decay = 1e-4f;
        o.grad_averaging = 1;
        return novograd_create(wrn_params(m), 1e-2f, &o);
    }
    return sgd_create(wrn_params(m), 0.05f, 0.9f);
}

/* steps of train + update on both, the LR moving (so SGD's momentum correction acts too). */
static void run_steps(wrn_model *g, optimizer *og, wrn_model *c, optimizer *oc, int steps)
{
    float *x = malloc((size_t)NB * PIX * sizeof *x);
    int y[NB];
    for (int s = 0; s < steps; s++) {
        batch(x, y);
        og->lr = oc->lr = (s % 5 == 4 ? 0.5f : 1.0f) * (og->kind->code == OPT_SGD ? 0.05f : 1e-2f);
        wrn_train_batch(g, x, y, NB, 5e-4f);
        wrn_train_batch(c, x, y, NB, 5e-4f);
        optimizer_step(og, wrn_params(g));
        optimizer_step(oc, wrn_params(c));
    }
    free(x);
}

static void steps_match(int kind)
{
    wrn_model *g = model(1, 0.01f), *c = model(0, 0.01f);
    optimizer *og = make_opt(g, kind), *oc = make_opt(c, kind);
    ck_assert_int_eq(og->device, 1);
    run_steps(g, og, c, oc, 20);
    expect_views("weights after 20 steps", g, c, 0, 2e-3);
    float *sg = host(og->state, og->n_state, 1);
    const double e = rel_err(sg, oc->state, oc->n_state);
    ck_assert_msg(e <= 2e-3, "optimizer state: error %.3g of scale", e);
    free(sg);
    optimizer_free(og);
    optimizer_free(oc);
    wrn_free(g);
    wrn_free(c);
}

START_TEST(sgd_20_steps) { steps_match(OPT_SGD); }
END_TEST

START_TEST(novograd_20_steps) { steps_match(OPT_NOVOGRAD); }
END_TEST

START_TEST(dropout_masks_agree)
{
    wrn_model *g = model(1, 0.3f), *c = model(0, 0.3f);
    float *x = malloc((size_t)NB * PIX * sizeof *x);
    int y[NB];
    batch(x, y);
    wrn_train_batch(g, x, y, NB, 0.0f);
    wrn_train_batch(c, x, y, NB, 0.0f);
    for (int b = 0; b < c->nblocks; b++) {
        const wrn_block *bc = &c->blocks[b];
        const size_t n = (size_t)NB * bc->cout * bc->h * bc->w;
        float *r = host(g->blocks[b].r1, n, 1);
        double scale = 0.0;
        for (size_t i = 0; i < n; i++)
            scale = fabs(bc->r1[i]) > scale ? fabs(bc->r1[i]) : scale;
        size_t differ = 0, dropped = 0;
        for (size_t i = 0; i < n; i++) {
            const int zg = r[i] == 0.0f, zc = bc->r1[i] == 0.0f;
            dropped += zc;
            /* a ReLU at the edge may flip on rounding; a dropout bit never does */
            if (zg != zc && fmax(fabs(r[i]), fabs(bc->r1[i])) > 1e-4 * scale)
                differ++;
        }
        ck_assert_msg(differ == 0, "block %d: %zu of %zu elements zero on one side only", b,
                      differ, n);
        ck_assert_msg(dropped > n / 4, "block %d: only %zu of %zu zero with p 0.3", b, dropped, n);
        free(r);
    }
    free(x);
    wrn_free(g);
    wrn_free(c);
}
END_TEST

/* from writes a checkpoint after 3 steps; to (fresh) loads it; both go on for 3 steps. */
static void resume_across(int from_gpu)
{
    char err[512];
    wrn_model *a = model(from_gpu, 0.01f), *b = model(!from_gpu, 0.01f);
    wrn_model *g = from_gpu ? a : b, *c = from_gpu ? b : a;
    optimizer *oa = make_opt(a, OPT_SGD), *ob = make_opt(b, OPT_SGD);
    optimizer *og = from_gpu ? oa : ob, *oc = from_gpu ? ob : oa;
    wrn_model *twin = model(!from_gpu, 0.01f); /* a's partner for the first 3 steps */
    optimizer *ot = make_opt(twin, OPT_SGD);
    if (from_gpu)
        run_steps(a, oa, twin, ot, 3);
    else
        run_steps(twin, ot, a, oa, 3);
    ck_assert_msg(ckpt_save_params(tmp_dir, 1, wrn_get_config(a), wrn_params(a), oa, err,
                                   sizeof err) == 0, "%s", err);
    ck_assert_msg(ckpt_load_params(tmp_dir, 1, wrn_get_config(b), wrn_params(b), ob, err,
                                   sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(wrn_params(b)->steps, wrn_params(a)->steps); /* the dropout counter */
    expect_views("weights after the load", g, c, 0, -1.0);
    expect_views("statistics after the load", g, c, 2, -1.0);
    ck_assert_int_eq(ob->iterations, oa->iterations);
    run_steps(g, og, c, oc, 3);
    expect_views("weights 3 steps after the load", g, c, 0, 2e-3);
    optimizer_free(oa);
    optimizer_free(ob);
    optimizer_free(ot);
    wrn_free(a);
    wrn_free(b);
    wrn_free(twin);
}

START_TEST(gpu_checkpoint_resumes_on_cpu) { resume_across(1); }
END_TEST

START_TEST(cpu_checkpoint_resumes_on_gpu) { resume_across(0); }
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("wrn_cuda");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_unchecked_fixture(tc, tmp_suite_setup, tmp_suite_teardown);
    tcase_add_checked_fixture(tc, tmp_test_setup, tmp_test_teardown);
    tcase_add_test(tc, train_step_matches_cpu);
    tcase_add_test(tc, dropout_masks_agree);
    tcase_add_test(tc, sgd_20_steps);
    tcase_add_test(tc, novograd_20_steps);
    tcase_add_test(tc, gpu_checkpoint_resumes_on_cpu);
    tcase_add_test(tc, cpu_checkpoint_resumes_on_gpu);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    const int rc = gpu_skip_status(NULL);
    if (rc != 0)
        return rc;
    setenv("CK_FORK", "no", 1); /* CUDA does not survive a fork */
    gpu_context_set_tf32(0);
    if (gpu_context_tf32() != 0) {
        printf("test_wrn_cuda: could not turn TF32 off\n");
        return EXIT_FAILURE;
    }
    return ck_mpi_main(argc, argv, suite(), 0);
}

#else

int main(void) { return gpu_skip_status(NULL); }

#endif
