/* test_optim.c — SGD and NovoGrad update rules (one process): values computed by hand for a few
 * steps, NovoGrad against the independent NumPy reference (tests/reference/novograd_ref.py →
 * tests/fixtures/novograd-*.txt), momentum correction, local accumulation, the trace lines.
 *
 * Hand values: SGD with lr 0.1 and momentum 0.9 on w = (1, -2, 0.5); NovoGrad on two views
 * with gradients whose norms are round (3-4-5). Tolerance 1e-6 relative: one float rounding
 * per operation on values of order 1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvd/hvd.h"
#include "lib/ck_mpi.h"
#include "lib/file_io.h"
#include "lib/tmpdir.h"
#include "model/params.h"
#include "optim/optim.h"

#define MAXN 64
#define MAXV 8

typedef struct {
    param_set ps;
    param_view views[MAXV];
    float params[MAXN], grads[MAXN], state[2];
} small_set;

/* A param_set over the test's own arrays; counts[] gives the views, back to back. */
static void small_init(small_set *s, const float *w, const int *counts, int nviews)
{
    memset(s, 0, sizeof *s);
    size_t off = 0;
    for (int v = 0; v < nviews; v++) {
        param_view *pv = &s->views[v];
        snprintf(pv->name, sizeof pv->name, "t%d", v);
        pv->offset = off;
        pv->count = (size_t)counts[v];
        pv->ndim = 1;
        pv->shape[0] = counts[v];
        off += pv->count;
    }
    memcpy(s->params, w, off * sizeof(float));
    s->ps = (param_set){.params = s->params, .grads = s->grads, .n = off, .views = s->views,
                        .nviews = nviews, .state = s->state, .n_state = 2};
    s->state[0] = 0.25f;
    s->state[1] = -1.5f;
}

static void set_grads(small_set *s, const float *g)
{
    memcpy(s->grads, g, s->ps.n * sizeof(float));
}

static void expect_close(const float *got, const double *want, size_t n, double rel,
                         const char *what)
{
    for (size_t i = 0; i < n; i++) {
        double tol = rel * (fabs(want[i]) > 1.0 ? fabs(want[i]) : 1.0);
        ck_assert_msg(fabs((double)got[i] - want[i]) <= tol, "%s [%zu]: got %.9g want %.9g", what,
                      i, (double)got[i], want[i]);
    }
}

START_TEST(sgd_two_steps_by_hand)
{
    small_set s;
    small_init(&s, (const float[]){1.0f, -2.0f, 0.5f}, (const int[]){3}, 1);
    optimizer *opt = sgd_create(&s.ps, 0.1f, 0.9f);
    ck_assert_ptr_nonnull(opt);
    ck_assert_str_eq(optimizer_name(opt), "sgd");
    ck_assert_uint_eq(opt->n_state, 3);
    set_grads(&s, (const float[]){0.5f, -1.0f, 2.0f});
    ck_assert_int_eq(optimizer_step(opt, &s.ps), 1);
    /* v = -lr·g = (-0.05, 0.1, -0.2); w += v */
    expect_close(opt->state, (const double[]){-0.05, 0.1, -0.2}, 3, 1e-6, "velocity 1");
    expect_close(s.params, (const double[]){0.95, -1.9, 0.3}, 3, 1e-6, "weights 1");
    set_grads(&s, (const float[]){1.0f, 1.0f, -1.0f});
    optimizer_step(opt, &s.ps);
    /* v = 0.9·v − 0.1·g = (−0.145, −0.01, −0.08) */
    expect_close(opt->state, (const double[]){-0.145, -0.01, -0.08}, 3, 1e-6, "velocity 2");
    expect_close(s.params, (const double[]){0.805, -1.91, 0.22}, 3, 1e-6, "weights 2");
    ck_assert_int_eq(opt->iterations, 2);
    ck_assert_float_eq(opt->last_lr, 0.1f);
    optimizer_free(opt);
}
END_TEST

/* The LR halves before step 3 (gradient 0 isolates the momentum term): with correction the
 * velocity is scaled by 0.9·0.05/0.1 = 0.45 for that step, without by 0.9; the step after uses
 * 0.9 again (the correction lasts one batch). */
static void momentum_case(int correction, double factor)
{
    small_set s;
    small_init(&s, (const float[]){1.0f, -2.0f, 0.5f}, (const int[]){3}, 1);
    optimizer *opt = sgd_create(&s.ps, 0.1f, 0.9f);
    opt->momentum_correction = correction;
    set_grads(&s, (const float[]){0.5f, -1.0f, 2.0f});
    optimizer_step(opt, &s.ps);
    set_grads(&s, (const float[]){1.0f, 1.0f, -1.0f});
    optimizer_step(opt, &s.ps);
    opt->lr = 0.05f;
    set_grads(&s, (const float[]){0.0f, 0.0f, 0.0f});
    optimizer_step(opt, &s.ps);
    double v[3] = {-0.145 * factor, -0.01 * factor, -0.08 * factor};
    double w[3] = {0.805 + v[0], -1.91 + v[1], 0.22 + v[2]};
    expect_close(opt->state, v, 3, 1e-6, "velocity after the LR change");
    expect_close(s.params, w, 3, 1e-6, "weights after the LR change");
    ck_assert_float_eq(opt->last_lr, 0.05f);
    optimizer_step(opt, &s.ps); /* same LR: plain momentum 0.9 */
    double v4[3] = {0.9 * v[0], 0.9 * v[1], 0.9 * v[2]};
    expect_close(opt->state, v4, 3, 1e-6, "velocity one step later");
    optimizer_free(opt);
}

START_TEST(sgd_momentum_correction_one_step)
{
    momentum_case(1, 0.45);
}
END_TEST

START_TEST(sgd_momentum_correction_off)
{
    momentum_case(0, 0.9);
}
END_TEST

START_TEST(sgd_without_momentum_is_plain_sgd)
{
    small_set s;
    small_init(&s, (const float[]){1.0f, -2.0f}, (const int[]){2}, 1);
    optimizer *opt = sgd_create(&s.ps, 0.5f, 0.0f);
    for (int k = 0; k < 3; k++) {
        set_grads(&s, (const float[]){1.0f, -0.5f});
        optimizer_step(opt, &s.ps);
    }
    expect_close(s.params, (const double[]){-0.5, -1.25}, 2, 1e-7, "w -= lr·g, three times");
    optimizer_free(opt);
}
END_TEST

/* Views (2) and (1): w = (1, 2 | 3), lr 0.1, β1 0.9, β2 0.999, ε 1e-7.
 * Step 1, g = (3, 4 | −2): v = (25 | 4) (no β2 at the first step), g' = (0.6, 0.8 | −1),
 *   m = −0.1·g' = (−0.06, −0.08 | 0.1), w = (0.94, 1.92 | 3.1).
 * Step 2, g = (0, 5 | 1): v_A = 0.999·25 + 0.001·25 = 25, g' = (0, 1),
 *   m = 0.9·m − 0.1·g' = (−0.054, −0.172), w = (0.886, 1.748);
 *   v_B = 0.999·4 + 0.001·1 = 3.997, g' = 1/(√3.997 + 1e-7) = 0.50018758,
 *   m = 0.09 − 0.050018758 = 0.039981242, w = 3.1399812. */
START_TEST(novograd_two_steps_by_hand)
{
    small_set s;
    small_init(&s, (const float[]){1.0f, 2.0f, 3.0f}, (const int[]){2, 1}, 2);
    novograd_options o = novograd_defaults();
    ck_assert_float_eq(o.beta1, 0.9f);
    ck_assert_float_eq(o.beta2, 0.999f);
    ck_assert_float_eq(o.eps, 1e-7f);
    ck_assert_float_eq(o.weight_decay, 0.0f);
    ck_assert_int_eq(o.grad_averaging, 0);
    optimizer *opt = novograd_create(&s.ps, 0.1f, &o);
    ck_assert_str_eq(optimizer_name(opt), "novograd");
    ck_assert_uint_eq(opt->n_state, 3 + 2); /* m per weight, v per view */
    set_grads(&s, (const float[]){3.0f, 4.0f, -2.0f});
    optimizer_step(opt, &s.ps);
    expect_close(opt->state + 3, (const double[]){25.0, 4.0}, 2, 1e-7, "v after step 1");
    expect_close(opt->state, (const double[]){-0.06, -0.08, 0.1}, 3, 1e-6, "m after step 1");
    expect_close(s.params, (const double[]){0.94, 1.92, 3.1}, 3, 1e-6, "w after step 1");
    set_grads(&s, (const float[]){0.0f, 5.0f, 1.0f});
    optimizer_step(opt, &s.ps);
    expect_close(opt->state + 3, (const double[]){25.0, 3.997}, 2, 1e-6, "v after step 2");
    expect_close(opt->state, (const double[]){-0.054, -0.172, 0.039981241948405}, 3, 1e-6,
                 "m after step 2");
    expect_close(s.params, (const double[]){0.886, 1.748, 3.1399812419484}, 3, 1e-6,
                 "w after step 2");
    optimizer_free(opt);
}
END_TEST

/* One view w = 3, wd 0.1, grad_averaging, lr 0.1, β1 0.9:
 * step 1, g = −2: v = 4, g' = −1 + 0.1·3 = −0.7 (no averaging at the first step),
 *   m = 0.07, w = 3.07;
 * step 2, g = 1: v = 3.997, g' = (0.50018758 + 0.1·3.07)·(1 − 0.9) = 0.080718758,
 *   m = 0.063 − 0.0080718758 = 0.054928124, w = 3.1249281. */
START_TEST(novograd_weight_decay_and_averaging_by_hand)
{
    small_set s;
    small_init(&s, (const float[]){3.0f}, (const int[]){1}, 1);
    novograd_options o = novograd_defaults();
    o.weight_decay = 0.1f;
    o.grad_averaging = 1;
    optimizer *opt = novograd_create(&s.ps, 0.1f, &o);
    set_grads(&s, (const float[]){-2.0f});
    optimizer_step(opt, &s.ps);
    expect_close(opt->state, (const double[]){0.07}, 1, 1e-6, "m after step 1");
    expect_close(s.params, (const double[]){3.07}, 1, 1e-6, "w after step 1");
    set_grads(&s, (const float[]){1.0f});
    optimizer_step(opt, &s.ps);
    expect_close(opt->state, (const double[]){0.054928124194841}, 1, 1e-6, "m after step 2");
    expect_close(s.params, (const double[]){3.12492812419484}, 1, 1e-6, "w after step 2");
    optimizer_free(opt);
}
END_TEST

/* Where ε goes matters when ‖g‖ is small: g = (3e-4, 4e-4), ε = 1e-3. tfa: √v + ε = 5e-4 + 1e-3,
 * g' = (0.2, 0.26667); with ε inside the root (OpenSeq2Seq) it would be √(2.5e-7 + 1e-3). */
START_TEST(novograd_epsilon_outside_the_root)
{
    small_set s;
    small_init(&s, (const float[]){0.0f, 0.0f}, (const int[]){2}, 1);
    novograd_options o = novograd_defaults();
    o.eps = 1e-3f;
    optimizer *opt = novograd_create(&s.ps, 1.0f, &o);
    set_grads(&s, (const float[]){3e-4f, 4e-4f});
    optimizer_step(opt, &s.ps);
    expect_close(opt->state + 2, (const double[]){2.5e-7}, 1, 1e-6, "v");
    expect_close(s.params, (const double[]){-0.2, -0.266666666666667}, 2, 1e-6, "w");
    optimizer_free(opt);
}
END_TEST

/* NovoGrad is never momentum-corrected (tfa has no `momentum` for Horovod to scale). */
START_TEST(novograd_ignores_momentum_correction)
{
    small_set s;
    small_init(&s, (const float[]){3.0f}, (const int[]){1}, 1);
    optimizer *opt = novograd_create(&s.ps, 0.1f, NULL);
    set_grads(&s, (const float[]){-2.0f});
    optimizer_step(opt, &s.ps); /* m = 0.1 */
    opt->lr = 0.05f;
    set_grads(&s, (const float[]){0.0f});
    optimizer_step(opt, &s.ps); /* m = 0.9·0.1, not 0.45·0.1 */
    expect_close(opt->state, (const double[]){0.09}, 1, 1e-6, "m after the LR change");
    optimizer_free(opt);
}
END_TEST

/* ---- the NumPy fixture ---- */

typedef struct {
    char name[32];
    novograd_options o;
    int n, nviews, steps;
    int off[MAXV], cnt[MAXV];
    double scale[MAXV], w0[MAXN], target[MAXN];
    double lr[16], w[16][MAXN];
} nov_fixture;

static void read_vec(FILE *f, double *out, int n, const char *path, const char *what)
{
    for (int i = 0; i < n; i++)
        ck_assert_msg(fscanf(f, "%lf", &out[i]) == 1, "%s: bad %s[%d]", path, what, i);
}

static void load_fixture(const char *path, nov_fixture *fx)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s (run tests/reference/novograd_ref.py)", path);
    memset(fx, 0, sizeof *fx);
    char key[64];
    int views_read = 0;
    while (fscanf(f, "%63s", key) == 1) {
        if (key[0] == '#') {
            int c;
            while ((c = fgetc(f)) != '\n' && c != EOF) {
            }
        } else if (!strcmp(key, "name")) {
            ck_assert_int_eq(fscanf(f, "%31s", fx->name), 1);
        } else if (!strcmp(key, "beta1")) {
            ck_assert_int_eq(fscanf(f, "%f", &fx->o.beta1), 1);
        } else if (!strcmp(key, "beta2")) {
            ck_assert_int_eq(fscanf(f, "%f", &fx->o.beta2), 1);
        } else if (!strcmp(key, "eps")) {
            ck_assert_int_eq(fscanf(f, "%f", &fx->o.eps), 1);
        } else if (!strcmp(key, "weight_decay")) {
            ck_assert_int_eq(fscanf(f, "%f", &fx->o.weight_decay), 1);
        } else if (!strcmp(key, "grad_averaging")) {
            ck_assert_int_eq(fscanf(f, "%d", &fx->o.grad_averaging), 1);
        } else if (!strcmp(key, "n")) {
            ck_assert_int_eq(fscanf(f, "%d", &fx->n), 1);
            ck_assert_msg(fx->n > 0 && fx->n <= MAXN, "%s: n %d", path, fx->n);
        } else if (!strcmp(key, "views")) {
            ck_assert_int_eq(fscanf(f, "%d", &fx->nviews), 1);
            ck_assert_msg(fx->nviews > 0 && fx->nviews <= MAXV, "%s: views %d", path, fx->nviews);
        } else if (!strcmp(key, "view")) {
            ck_assert_msg(views_read < fx->nviews, "%s: more than %d views", path, fx->nviews);
            char vname[64];
            ck_assert_int_eq(fscanf(f, "%63s %d %d %lf", vname, &fx->off[views_read],
                                    &fx->cnt[views_read], &fx->scale[views_read]), 4);
            views_read++;
        } else if (!strcmp(key, "w0")) {
            read_vec(f, fx->w0, fx->n, path, "w0");
        } else if (!strcmp(key, "target")) {
            read_vec(f, fx->target, fx->n, path, "target");
        } else if (!strcmp(key, "steps")) {
            ck_assert_int_eq(fscanf(f, "%d", &fx->steps), 1);
            ck_assert_msg(fx->steps > 0 && fx->steps <= 16, "%s: steps %d", path, fx->steps);
        } else if (!strcmp(key, "step")) {
            int k;
            double lr;
            ck_assert_int_eq(fscanf(f, "%d lr %lf w", &k, &lr), 2);
            ck_assert_msg(k >= 1 && k <= fx->steps, "%s: step %d of %d", path, k, fx->steps);
            fx->lr[k - 1] = lr;
            read_vec(f, fx->w[k - 1], fx->n, path, "w");
        } else {
            ck_abort_msg("%s: unknown key %s", path, key);
        }
    }
    fclose(f);
    ck_assert_int_eq(views_read, fx->nviews);
    ck_assert_int_gt(fx->steps, 0);
}

/* Runs the fixture's problem through common/optim/novograd.c; returns the worst |error| relative to
 * max(1, |w|) over all steps. */
static double run_fixture(const char *path)
{
    nov_fixture fx;
    load_fixture(path, &fx);
    small_set s;
    float w0[MAXN];
    for (int i = 0; i < fx.n; i++)
        w0[i] = (float)fx.w0[i];
    small_init(&s, w0, fx.cnt, fx.nviews);
    for (int v = 0; v < fx.nviews; v++)
        ck_assert_uint_eq(s.views[v].offset, (size_t)fx.off[v]);
    optimizer *opt = novograd_create(&s.ps, (float)fx.lr[0], &fx.o);
    double worst = 0.0;
    for (int k = 0; k < fx.steps; k++) {
        for (int v = 0; v < fx.nviews; v++)
            for (int i = fx.off[v]; i < fx.off[v] + fx.cnt[v]; i++)
                s.grads[i] = (float)fx.scale[v] * (s.params[i] - (float)fx.target[i]);
        opt->lr = (float)fx.lr[k];
        optimizer_step(opt, &s.ps);
        for (int i = 0; i < fx.n; i++) {
            double d = fabs((double)s.params[i] - fx.w[k][i]);
            d /= fabs(fx.w[k][i]) > 1.0 ? fabs(fx.w[k][i]) : 1.0;
            if (d > worst)
                worst = d;
        }
    }
    optimizer_free(opt);
    return worst;
}

/* float32 against the float64 trajectory: 5e-7 (about 4 float ulps at 1) covers the
 * roundings of six steps; the worst seen is printed. */
#define FIXTURE_TOL 5e-7

START_TEST(novograd_matches_numpy_reference)
{
    const char *files[] = {"tests/fixtures/novograd-defaults.txt",
                           "tests/fixtures/novograd-wd-avg.txt"};
    for (int i = 0; i < 2; i++) {
        double worst = run_fixture(files[i]);
        printf("novograd fixture %s: worst error %.3g (tolerance %.3g)\n", files[i], worst,
               FIXTURE_TOL);
        ck_assert_msg(worst <= FIXTURE_TOL, "%s: worst error %.3g > %.3g", files[i], worst,
                      FIXTURE_TOL);
    }
}
END_TEST

/* backward_passes_per_step = 3 (one process: averaging over a world of one is the identity):
 * the first two calls only accumulate; the third updates with the SUM of the three gradients
 * (Horovod's default, average_aggregated_gradients=False). */
START_TEST(accumulation_sums_k_passes)
{
    small_set a, b;
    small_init(&a, (const float[]){1.0f, -1.0f}, (const int[]){2}, 1);
    small_init(&b, (const float[]){1.0f, -1.0f}, (const int[]){2}, 1);
    optimizer *acc = hvd_distributed_optimizer_ex(sgd_create(&a.ps, 0.1f, 0.9f),
                                                  HVD_COMPRESS_NONE, 3);
    optimizer *one = sgd_create(&b.ps, 0.1f, 0.9f);
    const float g[3][2] = {{0.5f, 1.0f}, {-0.25f, 2.0f}, {1.0f, -0.5f}};
    for (int round = 0; round < 2; round++) {
        for (int k = 0; k < 3; k++) {
            set_grads(&a, g[k]);
            ck_assert_int_eq(optimizer_step(acc, &a.ps), k == 2);
            if (k < 2)
                ck_assert_float_eq(a.params[0], b.params[0]); /* nothing applied yet */
        }
        set_grads(&b, (const float[]){1.25f, 2.5f});
        optimizer_step(one, &b.ps);
        ck_assert_float_eq_tol(a.params[0], b.params[0], 1e-7f);
        ck_assert_float_eq_tol(a.params[1], b.params[1], 1e-7f);
        ck_assert_int_eq(acc->iterations, round + 1);
    }
    optimizer_free(acc);
    optimizer_free(one);
}
END_TEST

/* ---- trace lines ---- */

START_TEST(step_and_broadcast_write_trace_lines)
{
    setenv("HVDLAB_TRACE", tmp_dir, 1); /* forked test: trace.c looks it up on first use */
    small_set s;
    small_init(&s, (const float[]){1.0f, -2.0f, 0.5f}, (const int[]){3}, 1);
    optimizer *opt = sgd_create(&s.ps, 0.1f, 0.9f);
    set_grads(&s, (const float[]){0.5f, -1.0f, 2.0f});
    optimizer_step(opt, &s.ps);
    hvd_broadcast_parameters(&s.ps, 0);
    char want_step[256], want_bcast[256], path[256];
    snprintf(want_step, sizeof want_step,
             "opt=sgd lr=0.100000001 distributed=0 iter=1 grad_sum=%016llx param_sum=%016llx",
             (unsigned long long)params_checksum(s.grads, 3),
             (unsigned long long)params_checksum(s.params, 3));
    snprintf(want_bcast, sizeof want_bcast, "when=broadcast root=0 sum=%016llx state_sum=%016llx",
             (unsigned long long)params_checksum(s.params, 3),
             (unsigned long long)params_checksum(s.state, 2));
    snprintf(path, sizeof path, "%s/pid-%d.log", tmp_dir, (int)getpid());
    char *log = file_read(path, NULL);
    ck_assert_msg(log != NULL, "no trace file %s", path);
    ck_assert_msg(strstr(log, "event=step ") && strstr(log, want_step), "no step line %s in:\n%s",
                  want_step, log);
    ck_assert_msg(strstr(log, "event=params ") && strstr(log, want_bcast),
                  "no broadcast line %s in:\n%s", want_bcast, log);
    free(log);
    optimizer_free(opt);
}
END_TEST

START_TEST(broadcast_optimizer_state_alone_keeps_state)
{
    small_set s;
    small_init(&s, (const float[]){1.0f, -2.0f}, (const int[]){2}, 1);
    optimizer *opt = novograd_create(&s.ps, 0.1f, NULL);
    set_grads(&s, (const float[]){0.5f, -1.0f});
    optimizer_step(opt, &s.ps);
    float m0 = opt->state[0];
    hvd_broadcast_optimizer_state(opt, 0); /* world of one: unchanged */
    ck_assert_float_eq(opt->state[0], m0);
    ck_assert_int_eq(opt->iterations, 1);
    ck_assert_float_eq(opt->last_lr, 0.1f);
    optimizer_free(opt);
    optimizer_free(NULL);
}
END_TEST

/* A state buffer sized for another model stops the program with a message, not an overrun. */
START_TEST(step_on_another_param_set_is_fatal)
{
    small_set a, b;
    small_init(&a, (const float[]){1.0f, 2.0f}, (const int[]){2}, 1);
    small_init(&b, (const float[]){1.0f, 2.0f, 3.0f}, (const int[]){3}, 1);
    optimizer *opt = sgd_create(&a.ps, 0.1f, 0.9f);
    optimizer_step(opt, &b.ps);
}
END_TEST

/* The table of kinds: every listed name finds a kind of that name, its code finds the same kind,
 * no two rows share a name or code, the create functions and the lab's codes agree with it, and
 * an unknown name is an error that names it and the kinds there are. */
START_TEST(kinds_table_round_trips)
{
    char names[256], err[256], want[300];
    optimizer_kind_names(names, sizeof names, "|", "|");
    const optimizer_kind *seen[16];
    int n = 0;
    for (char *save = NULL, *name = strtok_r(names, "|", &save); name;
         name = strtok_r(NULL, "|", &save)) {
        const optimizer_kind *k = optimizer_kind_named(name, err, sizeof err);
        ck_assert_msg(k != NULL, "listed kind '%s' not found by name: %s", name, err);
        ck_assert_str_eq(k->name, name);
        ck_assert_msg(optimizer_kind_of(k->code) == k, "kind '%s' (code %d) not found by its code",
                      name, k->code);
        ck_assert_msg(k->state_floats && k->apply, "kind '%s' lacks state_floats or apply", name);
        for (int i = 0; i < n; i++)
            ck_assert_msg(seen[i] != k, "two rows of the table find kind '%s'", name);
        ck_assert_int_lt(n, 16);
        seen[n++] = k;
    }
    ck_assert_int_ge(n, 2);
    ck_assert_ptr_eq(optimizer_kind_of(OPT_SGD), &sgd_kind);
    ck_assert_ptr_eq(optimizer_kind_of(OPT_NOVOGRAD), &novograd_kind);
    ck_assert_ptr_null(optimizer_kind_of(-1));
    small_set s;
    small_init(&s, (const float[]){1.0f, 2.0f, 3.0f}, (const int[]){1, 2}, 2);
    optimizer *sgd = sgd_create(&s.ps, 0.1f, 0.9f), *nov = novograd_create(&s.ps, 0.1f, NULL);
    ck_assert_ptr_eq(sgd->kind, &sgd_kind);
    ck_assert_ptr_eq(nov->kind, &novograd_kind);
    ck_assert_uint_eq(sgd->n_state, sgd_kind.state_floats(&s.ps));
    ck_assert_uint_eq(nov->n_state, novograd_kind.state_floats(&s.ps));
    optimizer_free(sgd);
    optimizer_free(nov);
    ck_assert_ptr_null(optimizer_kind_named("adam", err, sizeof err));
    optimizer_kind_names(names, sizeof names, ", ", " or ");
    snprintf(want, sizeof want, "'adam' is not %s", names);
    ck_assert_str_eq(err, want);
    ck_assert_ptr_null(optimizer_kind_named("SGD", NULL, 0)); /* exact names; err may be NULL */
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("optim");
    TCase *tc = tcase_create("rules");
    tcase_add_unchecked_fixture(tc, tmp_suite_setup, tmp_suite_teardown);
    tcase_add_checked_fixture(tc, tmp_test_setup, tmp_test_teardown);
    tcase_add_test(tc, sgd_two_steps_by_hand);
    tcase_add_test(tc, sgd_momentum_correction_one_step);
    tcase_add_test(tc, sgd_momentum_correction_off);
    tcase_add_test(tc, sgd_without_momentum_is_plain_sgd);
    tcase_add_test(tc, novograd_two_steps_by_hand);
    tcase_add_test(tc, novograd_weight_decay_and_averaging_by_hand);
    tcase_add_test(tc, novograd_epsilon_outside_the_root);
    tcase_add_test(tc, novograd_ignores_momentum_correction);
    tcase_add_test(tc, novograd_matches_numpy_reference);
    tcase_add_test(tc, accumulation_sums_k_passes);
    tcase_add_test(tc, step_and_broadcast_write_trace_lines);
    tcase_add_test(tc, broadcast_optimizer_state_alone_keeps_state);
    tcase_add_test(tc, kinds_table_round_trips);
    tcase_add_exit_test(tc, step_on_another_param_set_is_fatal, 1);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, make_suite(), 0); }
