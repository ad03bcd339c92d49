/* wrn_match.c — the comparisons of wrn_match.h. */
#include "lib/wrn_match.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lib/ck_mpi.h"

double wm_max_abs(const float *a, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s = fmax(s, fabs((double)a[i]));
    return s;
}

double wm_err(const float *a, const float *ref, size_t n, double floor)
{
    double e = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)a[i] - ref[i]);
        e = d > e || d != d ? d : e; /* a NaN stays */
    }
    const double s = fmax(wm_max_abs(ref, n), floor);
    return s > 0 ? e / s : e;
}

double wm_l2(const float *a, const float *ref, size_t n)
{
    double e = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        e += ((double)a[i] - ref[i]) * ((double)a[i] - ref[i]);
        s += (double)ref[i] * ref[i];
    }
    return s > 0 ? sqrt(e / s) : sqrt(e);
}

static int ends_with(const char *s, const char *tail)
{
    const size_t n = strlen(s), k = strlen(tail);
    return n >= k && strcmp(s + n - k, tail) == 0;
}

int wm_bias_before_bn(const char *view_name)
{
    return ends_with(view_name, ".conv.b") || ends_with(view_name, ".conv1.b") ||
           ends_with(view_name, ".conv2.b");
}

double wm_views(const char *what, const float *a, const float *ref, const param_view *v, int nv,
                double floor, double cap, int skip_bn_bias, const char **worst_view)
{
    double worst = 0;
    *worst_view = nv > 0 ? v[0].name : "";
    for (int i = 0; i < nv; i++) {
        if (skip_bn_bias && wm_bias_before_bn(v[i].name))
            continue;
        const double e = wm_err(a + v[i].offset, ref + v[i].offset, v[i].count, floor);
        CK_EXPECT(e <= cap, "%s %s: error %.3g of its scale > %.3g", what, v[i].name, e, cap);
        if (!(e <= worst)) {
            worst = e;
            *worst_view = v[i].name;
        }
    }
    return worst;
}

optimizer *wm_make_opt(param_set *ps, int kind)
{
    if (kind == OPT_NOVOGRAD) {
        novograd_options o = novograd_defaults();
        o.weight_decay = 1e-4f;
        o.grad_averaging = 1;
        return novograd_create(ps, WM_NOVOGRAD_LR, &o);
    }
    return sgd_create(ps, WM_SGD_LR, 0.9f);
}

float wm_step_lr(int optimizer_kind, int s)
{
    return (s % 5 == 0 ? 0.5f : 1.0f) * (optimizer_kind == OPT_SGD ? WM_SGD_LR : WM_NOVOGRAD_LR);
}

size_t wm_mask_differ(const float *a, const float *ref, size_t n)
{
    const double scale = wm_max_abs(ref, n);
    size_t differ = 0;
    for (size_t i = 0; i < n; i++)
        if ((a[i] == 0.0f) != (ref[i] == 0.0f) && fmax(fabs(a[i]), fabs(ref[i])) > 1e-4 * scale)
            differ++;
    return differ;
}

wm_steps_report wm_steps_check(const char *name, const char *opt, int s, const float *params,
                               const float *ref, const param_view *views, int nviews, size_t n,
                               const float *state, const float *ref_state, size_t n_state)
{
    wm_steps_report r = {.checked = s == 1 || s == 5 || s == WM_STEPS_LONG};
    if (!r.checked)
        return r;
    const int lng = s == WM_STEPS_LONG;
    char what[128];
    snprintf(what, sizeof what, "%s %s after %d steps: weight", name, opt, s);
    r.views_tol = lng ? INFINITY : WM_STEPS_CAP;
    r.views = wm_views(what, params, ref, views, nviews, 1e-2 * wm_max_abs(ref, n), r.views_tol,
                       1, &r.worst_view);
    r.l2 = wm_l2(params, ref, n);
    r.l2_tol = lng ? WM_LONG_L2 : WM_STEPS_L2;
    CK_EXPECT(r.l2 <= r.l2_tol, "%s vector %.3g of its norm > %g", what, r.l2, r.l2_tol);
    r.state = wm_l2(state, ref_state, n_state);
    r.state_tol = lng ? WM_LONG_STATE_L2 : WM_STATE_L2;
    CK_EXPECT(r.state <= r.state_tol, "%s %s after %d steps: optimizer state %.3g of its norm > %g",
              name, opt, s, r.state, r.state_tol);
    return r;
}

void wm_steps_print(const char *what, const wm_steps_report *r)
{
    printf("  %s: weight views %.1e (tol %g, %s), weight vector %.1e (%g), optimizer state %.1e "
           "(%g)\n", what, r->views, r->views_tol, r->worst_view, r->l2, r->l2_tol, r->state,
           r->state_tol);
}

void wm_one_step_check(const char *name, const wm_step_result *a, const wm_step_result *ref,
                       const param_set *ps, size_t n_logits)
{
    const double el = fabs(a->loss - ref->loss) / fabs(ref->loss);
    CK_EXPECT(el <= WM_LOSS, "%s: loss %.9g vs %.9g (reference)", name, a->loss, ref->loss);
    CK_EXPECT(a->count == ref->count, "%s: count %zu vs %zu (reference)", name, a->count,
              ref->count);
    const char *gv, *sv;
    const double floor = WM_GRAD_FLOOR * wm_max_abs(ref->grads, ps->n);
    const double eg = wm_views(name, a->grads, ref->grads, ps->views, ps->nviews, floor,
                               WM_GRAD_CAP, 0, &gv);
    const double e2 = wm_l2(a->grads, ref->grads, ps->n);
    CK_EXPECT(e2 <= WM_GRAD_L2, "%s: gradient vector: error %.3g of its norm > %g", name, e2,
              WM_GRAD_L2);
    const double es = wm_views(name, a->state, ref->state, ps->state_views, ps->n_state_views, 0,
                               WM_STATS, 0, &sv);
    const double elog = wm_err(a->logits, ref->logits, n_logits, 0);
    CK_EXPECT(elog <= WM_LOGITS, "%s: logits: error %.3g of their scale > %g", name, elog,
              WM_LOGITS);
    printf("  %s one step: loss %.1e (tol %g), logits %.1e (%g), running statistics %.1e (%g, "
           "%s), gradient views %.1e (%g, %s), gradient vector %.1e (%g)\n", name, el, WM_LOSS,
           elog, WM_LOGITS, es, WM_STATS, sv, eg, WM_GRAD_CAP, gv, e2, WM_GRAD_L2);
}
