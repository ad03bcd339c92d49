/* ckpt_check.c — whether a checkpoint read from disk fits what a run expects (model config,
 * optimizer kind, counts, view tables), with one line saying how it does not. See ckpt.h.
 * Public: ckpt_check, ckpt_opt_name, ckpt_nonfinite.
 */
#include "ckpt/ckpt.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/errmsg.h"

const char *ckpt_opt_name(int kind)
{
    static _Thread_local char buf[32];
    if (kind == -1)
        return "no"; /* "checkpoint holds no optimizer state" */
    const optimizer_kind *k = optimizer_kind_of(kind);
    if (k)
        return k->name;
    snprintf(buf, sizeof buf, "optimizer-kind-%d", kind);
    return buf;
}

static void shape_str(const param_view *v, char *buf, size_t len)
{
    int n = snprintf(buf, len, "(");
    for (int k = 0; k < v->ndim && n > 0 && (size_t)n < len; k++)
        n += snprintf(buf + n, len - (size_t)n, k ? ", %d" : "%d", v->shape[k]);
    if (n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, ")");
}

static int same_view(const param_view *a, const param_view *b)
{
    if (strncmp(a->name, b->name, PARAM_NAME_LEN) || a->offset != b->offset ||
        a->count != b->count || a->ndim != b->ndim || a->decay != b->decay)
        return 0;
    for (int k = 0; k < a->ndim; k++)
        if (a->shape[k] != b->shape[k])
            return 0;
    return 1;
}

static int check_views(const param_view *got, int ngot, const param_view *want, int nwant,
                       const char *what, const char *path, char *err, size_t errlen)
{
    if (ngot != nwant)
        return errmsg_set(err, errlen, path, "checkpoint has %d %s views, the model has %d", ngot,
                          what, nwant);
    for (int i = 0; i < ngot; i++)
        if (!same_view(&got[i], &want[i])) {
            char sg[64], sw[64];
            shape_str(&got[i], sg, sizeof sg);
            shape_str(&want[i], sw, sizeof sw);
            return errmsg_set(err, errlen, path, "%s view %d is %s %s at %zu in the checkpoint, "
                              "%s %s at %zu in the model", what, i, got[i].name, sg, got[i].offset,
                              want[i].name, sw, want[i].offset);
        }
    return 0;
}

int ckpt_check(const ckpt_file *f, const ckpt_expect *want, const char *path, char *err,
               size_t errlen)
{
    const ckpt_data *d = &f->d;
    char wn[CKPT_NAME_LEN];
    ckpt_config_name(&want->cfg, wn, sizeof wn);
    if (d->cfg.depth != want->cfg.depth || d->cfg.width != want->cfg.width)
        return errmsg_set(err, errlen, path, "checkpoint of model %s (depth %d, width %d), but "
                          "this run builds %s (depth %d, width %d)", f->name, d->cfg.depth,
                          d->cfg.width, wn, want->cfg.depth, want->cfg.width);
    if (want->opt_kind >= 0 && d->opt_kind != want->opt_kind)
        return errmsg_set(err, errlen, path, "checkpoint holds %s optimizer state, but this run "
                          "uses %s", ckpt_opt_name(d->opt_kind), ckpt_opt_name(want->opt_kind));
    if (want->check_counts && (d->n_params != want->n_params || d->n_state != want->n_state ||
                               d->n_opt_state != want->n_opt_state))
        return errmsg_set(err, errlen, path, "checkpoint has %zu parameters, %zu state and %zu "
                          "optimizer values; this %s run has %zu, %zu and %zu", d->n_params,
                          d->n_state, d->n_opt_state, wn, want->n_params, want->n_state,
                          want->n_opt_state);
    if (want->views && check_views(d->views, d->nviews, want->views, want->nviews, "parameter",
                                   path, err, errlen))
        return -1;
    if (want->state_views && check_views(d->state_views, d->n_state_views, want->state_views,
                                         want->n_state_views, "state", path, err, errlen))
        return -1;
    return 0;
}


/* Index of the first non-finite value of a[0..n), or n. */
static size_t first_nonfinite(const float *a, size_t n)
{
    size_t i = 0;
    while (i < n && isfinite(a[i]))
        i++;
    return i;
}

int ckpt_nonfinite(const ckpt_data *d, char *what, size_t len)
{
    const struct {
        const char *name;
        const float *a;
        size_t n;
    } arr[] = {{"parameter", d->params, d->n_params}, {"batch-norm state", d->state, d->n_state},
               {"optimizer state", d->opt_state, d->n_opt_state}};
    for (size_t k = 0; k < sizeof arr / sizeof arr[0]; k++) {
        size_t i = first_nonfinite(arr[k].a, arr[k].n);
        if (i < arr[k].n) {
            snprintf(what, len, "%s %zu is %g", arr[k].name, i, (double)arr[k].a[i]);
            return 1;
        }
    }
    return 0;
}
