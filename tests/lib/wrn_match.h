/* wrn_match.h — comparing a whole WideResNet run of one model with the same run of a model that
 * differs from it only in rounding: the GPU model against the CPU (test_wrn_cuda.c), and CPU
 * models with other convolution kernels or layouts against each other (test_wrn_rounding.c,
 * which measures what rounding alone does and so guards these tolerances on every machine).
 *
 * err = max |a − ref| / max(max |ref|, floor) per named view; l2 = ||a − ref||₂ / ||ref||₂.
 * Why each tolerance is what it is: test_wrn_cuda.c's header.
 */
#ifndef HVDLAB_TESTS_WRN_MATCH_H
#define HVDLAB_TESTS_WRN_MATCH_H

#include <stddef.h>

#include "model/params.h"
#include "optim/optim.h"

/* One training step of wrn-16-2 from equal weights. */
#define WM_LOSS 1e-4        /* |Δloss| / loss */
#define WM_LOGITS 1e-3      /* inference logits after the step */
#define WM_STATS 3e-5       /* every running-statistics view */
#define WM_GRAD_FLOOR 1e-2  /* a gradient view's scale: at least this times the largest gradient */
#define WM_GRAD_CAP 5e-2    /* every gradient view */
#define WM_GRAD_L2 2e-3     /* the whole gradient vector */
/* Runs of SGD or NovoGrad from equal weights, checked after steps 1 and 5 (the LR was halved at
 * step 5) and WM_STEPS_LONG: every weight view (scale at least 1e-2 of the largest weight;
 * wm_bias_before_bn views left out), the whole weight vector, the optimizer state as a vector. */
#define WM_STEPS_CAP 3e-2     /* weight views after steps 1 and 5 */
#define WM_STEPS_L2 1e-2      /* weight vector after steps 1 and 5 */
#define WM_STATE_L2 1e-2      /* optimizer state after steps 1 and 5 */
#define WM_STEPS_LONG 20
#define WM_LONG_L2 2e-2       /* weight vector after WM_STEPS_LONG */
#define WM_LONG_STATE_L2 0.35 /* optimizer state after WM_STEPS_LONG */

/* The setup both suites share: the batches' seed, the optimizers' LRs (step s from 1). */
#define WM_BATCH_SEED 20251123
#define WM_SGD_LR 0.01f /* momentum 0.9; 0.05 diverges to NaN by step 13 on this noise */
#define WM_NOVOGRAD_LR 1e-2f
float wm_step_lr(int optimizer_kind, int s);
/* The optimizer both suites run on ps: OPT_SGD (WM_SGD_LR, momentum 0.9) or OPT_NOVOGRAD
 * (WM_NOVOGRAD_LR, weight decay 1e-4, gradient averaging). */
optimizer *wm_make_opt(param_set *ps, int optimizer_kind);

double wm_max_abs(const float *a, size_t n);
double wm_err(const float *a, const float *ref, size_t n, double floor);
double wm_l2(const float *a, const float *ref, size_t n);

/* 1: the bias of a convolution whose output goes straight into batch norm (stem.conv.b,
 * *.conv1.b, *.conv2.b; not *.short.b): batch norm subtracts it again, so its true gradient is 0
 * and what it holds is rounding noise. */
int wm_bias_before_bn(const char *view_name);

/* Every view of a against ref within cap of max(its scale, floor), each miss recorded with
 * CK_EXPECT (what names the comparison); skip_bn_bias: leave out wm_bias_before_bn views.
 * Returns the worst err and sets *worst_view. */
double wm_views(const char *what, const float *a, const float *ref, const param_view *v, int nv,
                double floor, double cap, int skip_bn_bias, const char **worst_view);


/* Elements of r1 (ReLU + dropout output, NCHW) zero on one side only where either side's value
 * is clearly away from zero (> 1e-4 of the reference's scale): a ReLU at the edge may flip on
 * rounding, a dropout bit never does. */
size_t wm_mask_differ(const float *a, const float *ref, size_t n);

/* One training step of a model (host copies of what it computed) and of the reference. */
typedef struct {
    double loss;
    size_t count;        /* correct predictions */
    const float *grads;  /* (ps->n,) */
    const float *state;  /* (ps->n_state,) running statistics */
    const float *logits; /* (n_logits,) inference after the step */
} wm_step_result;

/* The one-step checks (loss, count, gradient views and vector, running statistics, logits) of a
 * against ref, the views those of ref's param_set ps (CK_EXPECT); prints what they saw, one line
 * "  <name> one step: ...". */
void wm_one_step_check(const char *name, const wm_step_result *a, const wm_step_result *ref,
                       const param_set *ps, size_t n_logits);

typedef struct {
    int checked;                   /* 0: no check after this step */
    double views, views_tol, l2, l2_tol, state, state_tol;
    const char *worst_view;
} wm_steps_report;

/* After step s of a run: the checks above for that step (CK_EXPECT), what they saw. */
wm_steps_report wm_steps_check(const char *name, const char *opt, int s, const float *params,
                               const float *ref, const param_view *views, int nviews, size_t n,
                               const float *state, const float *ref_state, size_t n_state);
/* One line "  <what>: weight views ..., weight vector ..., optimizer state ..." of a report. */
void wm_steps_print(const char *what, const wm_steps_report *r);

#endif
