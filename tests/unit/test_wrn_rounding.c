/* test_wrn_rounding.c — what rounding alone does to test_wrn_cuda.c's comparisons, measured on
 * the CPU, so that the GPU suite's tolerances (tests/lib/wrn_match.h) are known to hold for a
 * correct model before a GPU ever runs it, and are checked again on every machine.
 *
 * test_wrn_cuda.c's setup exactly (wrn-16-2, batch 16 of uniform [-2, 2] noise with random labels
 * from its seed, model seed 7, dropout 0.01, weight decay 5e-4, SGD lr 0.01 momentum 0.9 and
 * NovoGrad lr 1e-2 with the LR halved every 5th step), its checks and its tolerances, with the
 * GPU model replaced by a CPU model that differs from the reference only in rounding:
 *   reference: NCHW activations, oneDNN direct convolutions (what test_wrn_cuda compares with);
 *   gemm:      NCHW, im2col + OpenBLAS sgemm convolutions (HVDLAB_CONV=gemm);
 *   default:   what a CPU model is by default here: on AVX-512, nChw16c activations and Winograd
 *              (HVDLAB_ACTIVATION_LAYOUT=auto, HVDLAB_CONV_ALGO=auto).
 * The checkpoint round trips' last check (3 steps after a load) is run with the load done by
 * copying the state. Each pair prints the worst error of every check next to its tolerance (the
 * figures are in test_wrn_cuda.c's header). Without oneDNN only gemm against itself would be
 * left, so the suite needs HVDLAB_DNNL (skipped, 77, otherwise).
 *
 * The checks fail on planted bugs in the code only one side runs (nChw16c batch norm, bn_c16.c):
 * the dropout hash index off by one (loss 5.4e-3, 118,157 mask elements, gradient views 1.1);
 * the running variance without M/(M−1) (running statistics 1.0e-3 > 3e-5); dgamma summing dy
 * instead of dy·x̂ (gradient views 0.64, gradient vector 1.4e-2); and when a tolerance is set
 * 10x under what rounding gives (WM_GRAD_CAP 1.2e-3, WM_STEPS_CAP 6e-4).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/ck_mpi.h"

#ifdef HVDLAB_DNNL

#include "lib/wrn_match.h"
#include "model/wrn_internal.h"
#include "nn/blocked16.h"
#include "nn/conv2d.h"
#include "nn/conv2d_dnnl.h"
#include "nn/layer_math.h"
#include "optim/optim.h"

#define NB 16
#define PIX (28 * 28)

typedef struct {
    const char *name, *backend, *algo, *layout;
} rounding;

static const rounding REF = {"nchw+direct", "dnnl", "direct", "nchw"};
static const rounding OTHERS[] = {
    {"gemm", "gemm", "direct", "nchw"},
    {"default", "dnnl", "auto", "auto"},
};

static uint64_t rng;

static void batch(float *x, int *y) /* test_wrn_cuda.c's */
{
    for (size_t i = 0; i < (size_t)NB * PIX; i++)
        x[i] = (float)((lm_splitmix64(&rng) >> 40) * 0x1.0p-24) * 4.0f - 2.0f;
    for (int i = 0; i < NB; i++)
        y[i] = (int)(lm_splitmix64(&rng) % WRN_CLASSES);
}

/* The backend and algorithm are read at every conv call; the layout once, in wrn_create. */
static void use(const rounding *r)
{
    ck_assert(conv2d_set_backend(r->backend) == 0);
    ck_assert(conv2d_dnnl_set_algo(r->algo) == 0);
}

static wrn_model *model(const rounding *r, float dropout)
{
    wrn_config cfg = {.depth = 16, .width = 2, .dropout = dropout};
    char err[256];
    use(r);
    setenv("HVDLAB_ACTIVATION_LAYOUT", r->layout, 1);
    wrn_model *m = wrn_create(&cfg, NB, 7, err, sizeof err);
    unsetenv("HVDLAB_ACTIVATION_LAYOUT");
    ck_assert_msg(m != NULL, "%s", err);
    return m;
}

static wrn_result train(const rounding *r, wrn_model *m, const float *x, const int *y, float wd)
{
    use(r);
    return wrn_train_batch(m, x, y, NB, wd);
}

/* test_wrn_cuda's train_step_matches_cpu */
static void one_step(const rounding *o, char *name)
{
    wrn_model *c = model(&REF, 0.01f), *g = model(o, 0.01f);
    snprintf(name, 64, "%s (%s)", o->name, wrn_activation_layout(g));
    float *x = malloc((size_t)NB * PIX * sizeof *x);
    int y[NB];
    batch(x, y);
    const wrn_result rc = train(&REF, c, x, y, 5e-4f), rg = train(o, g, x, y, 5e-4f);
    param_set *pc = wrn_params(c), *pg = wrn_params(g);
    float lg[NB * WRN_CLASSES], lc[NB * WRN_CLASSES];
    use(&REF);
    wrn_eval_batch(c, x, y, NB, lc);
    use(o);
    wrn_eval_batch(g, x, y, NB, lg);
    const wm_step_result a = {rg.loss, rg.count, pg->grads, pg->state, lg},
                         ref = {rc.loss, rc.count, pc->grads, pc->state, lc};
    wm_one_step_check(name, &a, &ref, pc, NB * WRN_CLASSES);
    free(x);
    wrn_free(g);
    wrn_free(c);
}

/* test_wrn_cuda's dropout_masks_agree, r1 read in NCHW whatever the layout */
static void dropout_masks(const rounding *o, const char *name)
{
    wrn_model *c = model(&REF, 0.3f), *g = model(o, 0.3f);
    float *x = malloc((size_t)NB * PIX * sizeof *x);
    int y[NB];
    batch(x, y);
    train(&REF, c, x, y, 0.0f);
    train(o, g, x, y, 0.0f);
    size_t worst = 0;
    for (int b = 0; b < c->nblocks; b++) {
        const wrn_block *bc = &c->blocks[b];
        const size_t n = (size_t)NB * bc->cout * bc->h * bc->w;
        float *r = malloc(n * sizeof *r);
        if (g->blocked)
            nchw_from_nchw16c(r, g->blocks[b].r1, NB, bc->cout, bc->h * bc->w);
        else
            memcpy(r, g->blocks[b].r1, n * sizeof *r);
        const size_t differ = wm_mask_differ(r, bc->r1, n);
        CK_EXPECT(differ == 0, "%s block %d: %zu of %zu elements zero on one side only", name, b,
                  differ, n);
        worst = differ > worst ? differ : worst;
        free(r);
    }
    printf("  %s dropout p 0.3: at most %zu elements zero on one side only (tol 0)\n", name,
           worst);
    free(x);
    wrn_free(g);
    wrn_free(c);
}

/* test_wrn_cuda's sgd_20_steps and novograd_20_steps */
static void steps(const rounding *o, const char *name, int kind)
{
    wrn_model *c = model(&REF, 0.01f), *g = model(o, 0.01f);
    optimizer *oc = wm_make_opt(wrn_params(c), kind), *og = wm_make_opt(wrn_params(g), kind);
    param_set *pc = wrn_params(c), *pg = wrn_params(g);
    float *x = malloc((size_t)NB * PIX * sizeof *x);
    int y[NB];
    const char *opt = kind == OPT_SGD ? "sgd" : "novograd";
    for (int s = 1; s <= WM_STEPS_LONG; s++) {
        batch(x, y);
        og->lr = oc->lr = wm_step_lr(kind, s);
        train(o, g, x, y, 5e-4f);
        train(&REF, c, x, y, 5e-4f);
        optimizer_step(og, pg);
        optimizer_step(oc, pc);
        const wm_steps_report r = wm_steps_check(name, opt, s, pg->params, pc->params, pc->views,
                                                 pc->nviews, pc->n, og->state, oc->state,
                                                 oc->n_state);
        if (r.checked) {
            char what[128];
            snprintf(what, sizeof what, "%s %s after %2d steps", name, opt, s);
            wm_steps_print(what, &r);
        }
    }
    free(x);
    optimizer_free(og);
    optimizer_free(oc);
    wrn_free(g);
    wrn_free(c);
}

/* test_wrn_cuda's checkpoint round trips: 3 SGD steps on each side, then the reference's
 * weights, statistics and momentum copied into the other model (what a checkpoint load does, bit
 * for bit), then 3 more steps, held to the checks after step 5 of a run. */
static void resumed(const rounding *o, const char *name)
{
    wrn_model *c = model(&REF, 0.01f), *g = model(o, 0.01f);
    optimizer *oc = wm_make_opt(wrn_params(c), OPT_SGD), *og = wm_make_opt(wrn_params(g), OPT_SGD);
    param_set *pc = wrn_params(c), *pg = wrn_params(g);
    float *x = malloc((size_t)NB * PIX * sizeof *x);
    int y[NB];
    for (int s = 1; s <= 6; s++) {
        if (s == 4) {
            memcpy(pg->params, pc->params, pc->n * sizeof(float));
            memcpy(pg->state, pc->state, pc->n_state * sizeof(float));
            memcpy(og->state, oc->state, oc->n_state * sizeof(float));
        }
        batch(x, y);
        og->lr = oc->lr = wm_step_lr(OPT_SGD, s - (s > 3 ? 3 : 0));
        train(o, g, x, y, 5e-4f);
        train(&REF, c, x, y, 5e-4f);
        optimizer_step(og, pg);
        optimizer_step(oc, pc);
    }
    const wm_steps_report r = wm_steps_check(name, "sgd resumed", 5, pg->params, pc->params,
                                             pc->views, pc->nviews, pc->n, og->state, oc->state,
                                             oc->n_state);
    char what[128];
    snprintf(what, sizeof what, "%s 3 sgd steps after a load", name);
    wm_steps_print(what, &r);
    free(x);
    optimizer_free(og);
    optimizer_free(oc);
    wrn_free(g);
    wrn_free(c);
}

START_TEST(rounding_fits_the_gpu_tolerances)
{
    for (size_t i = 0; i < sizeof OTHERS / sizeof *OTHERS; i++) {
        char name[64];
        rng = WM_BATCH_SEED; /* the batches test_wrn_cuda's tests draw, in its order */
        one_step(&OTHERS[i], name);
        dropout_masks(&OTHERS[i], name);
        steps(&OTHERS[i], name, OPT_SGD);
        steps(&OTHERS[i], name, OPT_NOVOGRAD);
        resumed(&OTHERS[i], name);
    }
    conv2d_set_backend("dnnl");
    conv2d_dnnl_set_algo("auto");
    CK_AGREE();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("wrn_rounding");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, rounding_fits_the_gpu_tolerances);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* the figures reach the log even when the check fails */
    return ck_mpi_main(argc, argv, suite(), 0);
}

#else

int main(void)
{
    printf("skipped: test_wrn_rounding needs the oneDNN backend (libdnnl-dev)\n");
    return 77;
}

#endif
