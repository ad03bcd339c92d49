/* diverge.c — stop a run whose gradient holds NaN or Inf, naming where and what to change.
 * See optim.h.
 * Public: optimizer_check_finite, optimizer_check_loss.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/errmsg.h"
#include "base/fatal.h"
#include "optim/lr.h"
#include "optim/optim.h"
#include "optim/optim_cuda.h"

/* Exponent all ones: Inf or NaN. An integer test, so -ffast-math could not fold it away and
 * the loop has no branch. */
static size_t count_non_finite(const float *x, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], sizeof u);
        bad += (u & 0x7f800000u) == 0x7f800000u;
    }
    return bad;
}

/* The view holding flat index i (a GPU model's check reports the first bad index). */
static const char *view_at(const param_set *ps, size_t i)
{
    for (int t = 0; t < ps->nviews; t++)
        if (i >= ps->views[t].offset && i < ps->views[t].offset + ps->views[t].count)
            return ps->views[t].name;
    return "?";
}

static const char *first_bad_view(const param_set *ps)
{
    for (int t = 0; t < ps->nviews; t++)
        if (count_non_finite(ps->grads + ps->views[t].offset, ps->views[t].count))
            return ps->views[t].name;
    return "?";
}

/* Where the loop is and the cure, from the schedule's record of the last LR it handed out;
 * without that record, from opt (NULL: no optimizer at hand). */
static void where_and_cure(const optimizer *opt, char *where, size_t wlen, char *cure,
                           size_t clen)
{
    lr_position p = lr_lab_position();
    if (!p.known && !opt) {
        snprintf(where, wlen, "after the last update");
        snprintf(cure, clen, "lower the learning rate or warm up to it");
        return;
    }
    if (!p.known) {
        snprintf(where, wlen, "after %ld optimizer steps", opt->iterations);
        snprintf(cure, clen, "learning rate %g in use; lower the learning rate or warm up to it",
                 (double)opt->lr);
        return;
    }
    const double lr = opt ? (double)opt->lr : (double)p.lr;
    double base = (double)p.peak_lr / (p.size > 0 ? p.size : 1);
    snprintf(where, wlen, "at epoch %d, step %d of %d", p.epoch + 1, p.batch + 1,
             p.steps_per_epoch);
    if (p.warmup_epochs == 0)
        snprintf(cure, clen, "learning rate %g in use (--base-lr %g x %d ranks, no warmup); warm "
                 "up to it with --warmup-epochs (the lab uses 5) or use a smaller --base-lr",
                 lr, base, p.size);
    else if (p.epoch < p.warmup_epochs)
        snprintf(cure, clen, "learning rate %g in use, warming up to --base-lr %g x %d ranks over "
                 "%d epochs; use a smaller --base-lr", lr, base, p.size, p.warmup_epochs);
    else
        snprintf(cure, clen, "learning rate %g in use (--base-lr %g x %d ranks, after a %d-epoch "
                 "warmup); use a smaller --base-lr or a longer --warmup-epochs", lr, base, p.size,
                 p.warmup_epochs);
}

void optimizer_check_finite(const optimizer *opt, const param_set *ps)
{
    size_t first = 0, bad;
#ifdef HVDLAB_CUDA
    if (ps->device) /* a device reduction: two numbers come back, not the gradient */
        bad = optim_non_finite_cuda(ps->grads, ps->n, &first);
    else
#endif
        bad = count_non_finite(ps->grads, ps->n);
    if (!bad)
        return;
    char where[96], cure[ERRMSG_LEN / 2];
    where_and_cure(opt, where, sizeof where, cure, sizeof cure);
    fatal_error("training diverged %s: the %sgradient holds %zu NaN or Inf values of %zu (first "
                "in %s); %s", where, opt->distributed ? "averaged " : "", bad, ps->n,
                ps->device ? view_at(ps, first) : first_bad_view(ps), cure);
}

void optimizer_check_loss(double loss)
{
    if (isfinite(loss))
        return;
    char where[96], cure[ERRMSG_LEN / 2];
    where_and_cure(NULL, where, sizeof where, cure, sizeof cure);
    fatal_error("training diverged %s: the evaluation after it gives a loss of %s, so that "
                "update took the weights where the model computes no finite loss (no later "
                "gradient was there to show it); %s", where, isnan(loss) ? "NaN" : "Inf", cure);
}
