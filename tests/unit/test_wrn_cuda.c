/* test_wrn_cuda.c — the whole WideResNet on the GPU against the same model on the CPU.
 *
 * Needs a CUDA build and a visible GPU; without one it prints "skipped: no GPU (reason)" and
 * exits 77 (counted as skipped), by the rule of test_twins_cuda.c: 77 only when there is no GPU
 * to use, 1 when a GPU is there but CUDA cannot use it. TF32 is off.
 *
 * Two models from one seed, one built on the CPU (a config's device left zero) and one on GPU 0
 * (wrn_device_of(0)), fed the same batches. The CPU reference is pinned to NCHW
 * activations and oneDNN's direct convolutions (HVDLAB_ACTIVATION_LAYOUT=nchw, algorithm
 * direct), not the default of an AVX-512 machine (nChw16c + Winograd): its activations (r1
 * below) compare element by element with the GPU model's, and direct convolutions add no
 * Winograd transform error (up to 4.2e-6 of a conv's scale). The CPU default is held to this
 * reference by test_wrn_blocked.c and test_wrn_rounding.c. The GPU model takes the layout the
 * suite was started with (unset: the default, NHWC, r1 turned to NCHW before it is compared;
 * HVDLAB_ACTIVATION_LAYOUT=nchw: NCHW; parameters, gradients and checkpoints have no layout).
 *
 * The tolerances are tests/lib/wrn_match.h's (err = max |gpu − cpu| / max(max |cpu|, floor) per
 * named view, l2 = ||gpu − cpu||₂ / ||cpu||₂). cuDNN against oneDNN is a change of rounding, and
 * test_wrn_rounding.c measures on the CPU what a change of rounding alone does to these very
 * checks (this file's batches, seed and steps; gemm against direct, and nChw16c + Winograd
 * against NCHW + direct), and fails if it exceeds them. Its figures (2 cores, AVX-512), worst of
 * the two pairs, against the tolerance (a build without oneDNN, such as the GPU test machine's,
 * has the gemm path as its CPU reference: the first pair's other side):
 *   one training step of wrn-16-2: loss 4.2e-8 (1e-4), inference logits 1.0e-6 (1e-3),
 *   running statistics 3.9e-6 (3e-5, so that a running variance without the M/(M−1)
 *   correction, 1.2e-4 off, fails); gradient views 1.2e-2 (5e-2, each view's scale at least
 *   1e-2 of the largest gradient), the whole gradient vector 2.0e-4 of its norm (2e-3).
 *   Gradients get the most room because at random initial weights a pre-activation within ~1e-6
 *   of 0 flips its ReLU under any change of rounding and moves some gradient views by ~1e-2 of
 *   their scale (test_wrn_blocked.c); the biases of convolutions that feed batch norm have a
 *   true gradient of 0 (batch norm subtracts them again), so without the floor their error is
 *   O(1) of their own (noise) scale: 1.4-2.2 measured, which the earlier "every gradient view
 *   2e-3 of its scale" could never pass.
 *   SGD (lr 0.01, momentum 0.9) and NovoGrad (lr 1e-2) runs, the LR halved every 5th step:
 *   after steps 1 and 5, weight views 6.0e-3 (3e-2), the weight vector 2.2e-3 (1e-2), the
 *   optimizer state 1.4e-3 (1e-2); after step 20, where trajectories on random labels have
 *   drifted apart, the weight vector 4.9e-3 (2e-2) and the state 1.4e-1 (0.35): loose sanity
 *   bounds (a wrong dropout mask reaches 2.6e-2 and 0.5 there, and fails from step 1); weight
 *   views reach 1.2e-1 there and are not checked. Weight views leave out the biases before
 *   batch norm: NovoGrad normalises their noise gradient to steps of the LR's size. These run
 *   figures barely move when one side's gradients also get relative noise up to 1e-3 per element
 *   per step (1,000x float rounding; a one-off experiment on the gemm pair): after step 5 weight
 *   views 4.3e-3, optimizer state 4.4e-3; after step 20 the weight vector 4.5e-3, the state
 *   1.6e-1: the runs drift apart through ReLU flips, whatever the size of the rounding.
 *   The SGD LR was 0.05: from these weights on this noise the loss then grows from 8 to NaN by
 *   step 13 on the CPU alone (a fatal "training diverged").
 * A wrong index, mask, layout or missing term moves a gradient by O(1) of its scale, and a wrong
 * optimizer update moves the weights after one step (test_wrn_rounding.c plants such bugs).
 *   dropout (p 0.3): r1 of every block is zero at the same places wherever either side's value
 *   is clearly away from zero (the mask bits are the CPU's: test_twins_cuda checks them exactly;
 *   0 elements measured between CPU roundings);
 *   a checkpoint written by the GPU model loads into a CPU model with the same bits and the two
 *   continue the same run (3 more SGD steps: the step-5 checks above), and back;
 *   with every bias random (the ones before batch norm start at 0 otherwise), one step's running
 *   statistics and the inference logits after it (the running-statistics and logits tolerances
 *   above): the GPU's folded bias (its default) dropped fails it, 1.0 of stem.bn.mean's
 *   scale off, in the CPU emulator.
 *   a training step and its update wait for the GPU exactly five times (the numbers it brings
 *   back; an extra gpu_context_sync in the cross-entropy's backward fails it with 18 waits in 3
 *   steps, in the CPU emulator).
 *
 * Built again with HVDLAB_CUDA_EMU (make test-emu, tests/emu/) it needs no GPU: the GPU model's
 * kernels run on the CPU under the emulator and its convolutions and dense layers are the CPU's
 * own, so it checks the rest of the GPU path (kernels, wiring, optimizer kernels, checkpoints).
 */
#include <stdio.h>
#include <stdlib.h>

#include "lib/gpu_skip.h"

#ifdef HVDLAB_CUDA

#include <cuda_runtime_api.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
#include "lib/ck_mpi.h"
#include "lib/fill.h"
#include "lib/nhwc.h"
#include "lib/tmpdir.h"
#include "lib/wrn_match.h"
#include "model/wrn_internal.h"
#include "nn/gpu_context.h"
#ifdef HVDLAB_DNNL
#include "nn/conv2d_dnnl.h"
#endif
#include "nn/layer_math.h"
#include "optim/optim.h"

#define NB 16
#define PIX (28 * 28)

static uint64_t rng = WM_BATCH_SEED;

static void batch(float *x, int *y)
{
    for (size_t i = 0; i < (size_t)NB * PIX; i++)
        x[i] = (float)((lm_splitmix64(&rng) >> 40) * 0x1.0p-24) * 4.0f - 2.0f;
    for (int i = 0; i < NB; i++)
        y[i] = (int)(lm_splitmix64(&rng) % WRN_CLASSES);
}

/* HVDLAB_ACTIVATION_LAYOUT as the suite was started with: the GPU model's (unset: the default,
 * NHWC; nchw: tests/emu/run_emu.sh and tools/gpu_session.sh run the suite both ways). */
static const char *gpu_layout;

/* Whether the GPU model is to keep its activations NHWC: the default and nhwc (wrn_layout.c). */
static int gpu_layout_nhwc(void)
{
    return !gpu_layout || !*gpu_layout || strcmp(gpu_layout, "auto") == 0 ||
           strcmp(gpu_layout, "nhwc") == 0;
}

static wrn_model *model(int gpu, float dropout)
{
    wrn_config cfg = {.depth = 16, .width = 2, .dropout = dropout,
                      .device = wrn_device_of(gpu ? 0 : -1)};
    char err[256];
    /* the CPU reference NCHW (see the top); the GPU model as the suite was started */
    if (!gpu)
        setenv("HVDLAB_ACTIVATION_LAYOUT", "nchw", 1);
    else if (gpu_layout)
        setenv("HVDLAB_ACTIVATION_LAYOUT", gpu_layout, 1);
    wrn_model *m = wrn_create(&cfg, NB, 7, err, sizeof err);
    unsetenv("HVDLAB_ACTIVATION_LAYOUT");
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

/* Every view of which (0 params, 1 grads, 2 state) bit for bit. */
static void expect_bits(const char *what, wrn_model *g, wrn_model *c, int which)
{
    param_set *pg = wrn_params(g), *pc = wrn_params(c);
    const float *bg = which == 0 ? pg->params : which == 1 ? pg->grads : pg->state;
    const float *bc = which == 0 ? pc->params : which == 1 ? pc->grads : pc->state;
    const size_t n = which == 2 ? pc->n_state : pc->n;
    const param_view *v = which == 2 ? pc->state_views : pc->views;
    const int nv = which == 2 ? pc->n_state_views : pc->nviews;
    float *h = host(bg, n, pg->device);
    for (int t = 0; t < nv; t++)
        ck_assert_msg(memcmp(h + v[t].offset, bc + v[t].offset, v[t].count * sizeof *h) == 0,
                      "%s %s: bits differ", what, v[t].name);
    free(h);
}

/* wrn_match.h's checks after step s of a run (s from 1); prints what they saw. */
static void expect_steps(const char *what, const char *opt, int s, wrn_model *g, optimizer *og,
                         wrn_model *c, optimizer *oc)
{
    param_set *pg = wrn_params(g), *pc = wrn_params(c);
    float *w = host(pg->params, pc->n, 1), *st = host(og->state, oc->n_state, 1);
    const wm_steps_report r = wm_steps_check(what, opt, s, w, pc->params, pc->views, pc->nviews,
                                             pc->n, st, oc->state, oc->n_state);
    if (r.checked) {
        char line[128];
        snprintf(line, sizeof line, "%s %s after %d steps", what, opt, s);
        wm_steps_print(line, &r);
    }
    free(w);
    free(st);
}

START_TEST(train_step_matches_cpu)
{
    wrn_model *g = model(1, 0.01f), *c = model(0, 0.01f);
    expect_bits("initial weights", g, c, 0);
    float *x = malloc((size_t)NB * PIX * sizeof *x);
    int y[NB];
    batch(x, y);
    const wrn_result rg = wrn_train_batch(g, x, y, NB, 5e-4f);
    const wrn_result rc = wrn_train_batch(c, x, y, NB, 5e-4f);
    param_set *pg = wrn_params(g), *pc = wrn_params(c);
    float *gr = host(pg->grads, pc->n, 1), *st = host(pg->state, pc->n_state, 1);
    float lg[NB * WRN_CLASSES], lc[NB * WRN_CLASSES];
    wrn_eval_batch(g, x, y, NB, lg);
    wrn_eval_batch(c, x, y, NB, lc);
    const wm_step_result a = {rg.loss, rg.count, gr, st, lg},
                         ref = {rc.loss, rc.count, pc->grads, pc->state, lc};
    wm_one_step_check("gpu", &a, &ref, pc, NB * WRN_CLASSES);
    free(gr);
    free(st);
    CK_AGREE();
    free(x);
    wrn_free(g);
    wrn_free(c);
}
END_TEST

/* steps of train + update on both, the LR moving (so SGD's momentum correction acts too);
 * what: "" for no checks, else checked after each step (expect_steps). */
static void run_steps(wrn_model *g, optimizer *og, wrn_model *c, optimizer *oc, int steps,
                      const char *what)
{
    float *x = malloc((size_t)NB * PIX * sizeof *x);
    int y[NB];
    const char *opt = og->kind->code == OPT_SGD ? "sgd" : "novograd";
    for (int s = 1; s <= steps; s++) {
        batch(x, y);
        og->lr = oc->lr = wm_step_lr(og->kind->code, s);
        wrn_train_batch(g, x, y, NB, 5e-4f);
        wrn_train_batch(c, x, y, NB, 5e-4f);
        optimizer_step(og, wrn_params(g));
        optimizer_step(oc, wrn_params(c));
        if (*what)
            expect_steps(what, opt, s, g, og, c, oc);
    }
    free(x);
}

static void steps_match(int kind)
{
    wrn_model *g = model(1, 0.01f), *c = model(0, 0.01f);
    optimizer *og = wm_make_opt(wrn_params(g), kind), *oc = wm_make_opt(wrn_params(c), kind);
    ck_assert_int_eq(og->device, 1);
    run_steps(g, og, c, oc, WM_STEPS_LONG, "gpu vs cpu");
    CK_AGREE();
    optimizer_free(og);
    optimizer_free(oc);
    wrn_free(g);
    wrn_free(c);
}

/* The biases of the convolutions before batch norm start at 0, and batch norm takes them out of
 * its output again, so the checks above cannot see where they go. Here every bias is random on
 * both sides before one training step: the running means carry the biases before batch norm
 * (0.1 of the batch's mean), and the inference logits are made with them. That is where the
 * GPU's fold (its default: the bias added inside batch norm, not by the convolution) must put
 * them. Its own batch (seed 99), so the batches of the other tests stay as they were. */
START_TEST(conv_biases_reach_running_stats)
{
    wrn_model *g = model(1, 0.0f), *c = model(0, 0.0f);
    param_set *pg = wrn_params(g), *pc = wrn_params(c);
    uint64_t r = 99;
    for (int i = 0; i < pc->nviews; i++) {
        const param_view *v = &pc->views[i];
        const size_t len = strlen(v->name);
        if (len < 2 || strcmp(v->name + len - 2, ".b") != 0)
            continue;
        float *b = rand_floats(&r, v->count, -0.5f, 0.5f);
        memcpy(pc->params + v->offset, b, v->count * sizeof *b);
        params_from_host(pg->params + v->offset, b, v->count, 1);
        free(b);
    }
    float *x = rand_floats(&r, (size_t)NB * PIX, -2.0f, 2.0f);
    int y[NB];
    for (int i = 0; i < NB; i++)
        y[i] = i % WRN_CLASSES;
    wrn_train_batch(g, x, y, NB, 5e-4f);
    wrn_train_batch(c, x, y, NB, 5e-4f);
    float *st = host(pg->state, pc->n_state, 1);
    for (int i = 0; i < pc->n_state_views; i++) {
        const param_view *v = &pc->state_views[i];
        const double e = wm_err(st + v->offset, pc->state + v->offset, v->count, 0.0);
        ck_assert_msg(e <= WM_STATS, "running statistics %s: GPU %.2e of its scale off the CPU "
                      "(tolerance %.0e)", v->name, e, WM_STATS);
    }
    float lg[NB * WRN_CLASSES], lc[NB * WRN_CLASSES];
    wrn_eval_batch(g, x, y, NB, lg);
    wrn_eval_batch(c, x, y, NB, lc);
    const double e = wm_err(lg, lc, NB * WRN_CLASSES, 0.0);
    ck_assert_msg(e <= WM_LOGITS, "inference logits: GPU %.2e of their scale off the CPU "
                  "(tolerance %.0e)", e, WM_LOGITS);
    free(st);
    free(x);
    wrn_free(g);
    wrn_free(c);
}
END_TEST

START_TEST(sgd_20_steps) { steps_match(OPT_SGD); }
END_TEST

START_TEST(novograd_20_steps) { steps_match(OPT_NOVOGRAD); }
END_TEST

START_TEST(dropout_masks_agree)
{
    wrn_model *g = model(1, 0.3f), *c = model(0, 0.3f);
    ck_assert_msg(g->nhwc == gpu_layout_nhwc(),
                  "HVDLAB_ACTIVATION_LAYOUT=%s gave a GPU model in %s",
                  gpu_layout ? gpu_layout : "(unset)", wrn_activation_layout(g));
    float *x = malloc((size_t)NB * PIX * sizeof *x);
    int y[NB];
    batch(x, y);
    wrn_train_batch(g, x, y, NB, 0.0f);
    wrn_train_batch(c, x, y, NB, 0.0f);
    for (int b = 0; b < c->nblocks; b++) {
        const wrn_block *bc = &c->blocks[b];
        const size_t n = (size_t)NB * bc->cout * bc->h * bc->w;
        float *r = host(g->blocks[b].r1, n, 1);
        if (g->nhwc) { /* (N, H·W, C) -> NCHW, to compare element by element */
            float *t = malloc(n * sizeof *t);
            nhwc_transpose(t, r, n, (size_t)bc->cout, (size_t)bc->h * bc->w, 0);
            free(r);
            r = t;
        }
        size_t dropped = 0;
        for (size_t i = 0; i < n; i++)
            dropped += bc->r1[i] == 0.0f;
        const size_t differ = wm_mask_differ(r, bc->r1, n);
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
    optimizer *oa = wm_make_opt(wrn_params(a), OPT_SGD), *ob = wm_make_opt(wrn_params(b), OPT_SGD);
    optimizer *og = from_gpu ? oa : ob, *oc = from_gpu ? ob : oa;
    wrn_model *twin = model(!from_gpu, 0.01f); /* a's partner for the first 3 steps */
    optimizer *ot = wm_make_opt(wrn_params(twin), OPT_SGD);
    if (from_gpu)
        run_steps(a, oa, twin, ot, 3, "");
    else
        run_steps(twin, ot, a, oa, 3, "");
    ck_assert_msg(ckpt_save_params(tmp_dir, 1, wrn_get_config(a), wrn_params(a), oa, err,
                                   sizeof err) == 0, "%s", err);
    ck_assert_msg(ckpt_load_params(tmp_dir, 1, wrn_get_config(b), wrn_params(b), ob, err,
                                   sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(wrn_params(b)->steps, wrn_params(a)->steps); /* the dropout counter */
    expect_bits("weights after the load", g, c, 0);
    expect_bits("statistics after the load", g, c, 2);
    ck_assert_int_eq(ob->iterations, oa->iterations);
    /* 3 more steps from equal weights: held to the checks after step 5 of a run (wrn_match.h) */
    run_steps(g, og, c, oc, 3, "");
    expect_steps("3 steps after the load", "sgd", 5, g, og, c, oc);
    CK_AGREE();
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

/* No round trip inside a step but the ones that bring its numbers back (issue 12: "per batch
 * only the loss and the correct count come back"): in the steady state a training step and its
 * update wait for the GPU five times (gpu_context_waited counts the waits): for the pinned input
 * buffer of two steps before (its upload long done), the loss, the correct count, the L2 term
 * (weight decay on) and the optimizer's NaN/Inf count. A new wait in the step path fails this,
 * where it would only cost speed unseen. Its own case (CK_RUN_CASE=waits runs it alone). */
START_TEST(step_waits_only_for_its_numbers)
{
    wrn_model *g = model(1, 0.01f);
    optimizer *og = wm_make_opt(wrn_params(g), OPT_SGD);
    float *x = malloc((size_t)NB * PIX * sizeof *x);
    int y[NB];
    long before = 0, after = 0;
    for (int s = 0; s < 5; s++) {
        if (s == 2) /* both input buffers used; the plans made */
            gpu_context_waited(&before);
        batch(x, y);
        wrn_train_batch(g, x, y, NB, 5e-4f);
        optimizer_step(og, wrn_params(g));
    }
    gpu_context_waited(&after);
    ck_assert_msg(after - before == 3 * 5,
                  "%ld waits for the GPU in 3 training steps, expected 15 (5 a step: the input "
                  "buffer, loss, correct count, L2 term, NaN check)",
                  after - before);
    free(x);
    optimizer_free(og);
    wrn_free(g);
}
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
    tcase_add_test(tc, conv_biases_reach_running_stats);
    suite_add_tcase(s, tc);
    TCase *waits = tcase_create("waits");
    tcase_set_timeout(waits, 600);
    tcase_add_test(waits, step_waits_only_for_its_numbers);
    suite_add_tcase(s, waits);
    return s;
}

int main(int argc, char **argv)
{
#ifdef HVDLAB_CUDA_EMU
    printf("test_wrn_emu: the GPU model emulated on the CPU (tests/emu), its convolutions and "
           "dense layers the CPU's: its kernels and wiring, not a GPU result\n");
#endif
    const int rc = gpu_skip_status(NULL);
    if (rc != 0)
        return rc;
    setenv("CK_FORK", "no", 1); /* CUDA does not survive a fork */
    const char *lay = getenv("HVDLAB_ACTIVATION_LAYOUT");
    gpu_layout = lay ? strdup(lay) : NULL;
    printf("test_wrn_cuda: the GPU model's activations as HVDLAB_ACTIVATION_LAYOUT=%s gives them\n",
           gpu_layout ? gpu_layout : "(unset)");
    gpu_context_set_tf32(0);
#ifdef HVDLAB_DNNL
    conv2d_dnnl_set_algo("direct"); /* the CPU reference: see the top */
#endif
    if (gpu_context_tf32() != 0) {
        printf("test_wrn_cuda: could not turn TF32 off\n");
        return EXIT_FAILURE;
    }
    return ck_mpi_main(argc, argv, suite(), 0);
}

#else

int main(void) { return gpu_skip_status(NULL); }

#endif
