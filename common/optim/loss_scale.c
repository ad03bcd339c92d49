/* loss_scale.c — dynamic loss scaling: unscale, look for overflow, agree over the ranks, grow or
 * back off. See loss_scale.h.
 * Public: loss_scale_defaults, loss_scale_unscale, loss_scale_update.
 */
#include "optim/loss_scale.h"

#include <stdint.h>
#include <string.h>

#include "base/trace.h"
#include "hvd/hvd.h"

loss_scale loss_scale_defaults(void)
{
    return (loss_scale){.scale = 65536.0f, .growth = 2.0f, .backoff = 0.5f,
                        .growth_interval = 2000, .min_scale = 1.0f, .max_scale = 16777216.0f,
                        .agree = 1};
}

size_t loss_scale_unscale(const loss_scale *s, float *g, size_t n)
{
    const float inv = 1.0f / s->scale; /* exact when S is a power of two, as the defaults keep it */
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        g[i] *= inv;
        uint32_t u; /* exponent all ones: Inf or NaN (an integer test, as diverge.c's) */
        memcpy(&u, &g[i], sizeof u);
        bad += (u & 0x7f800000u) == 0x7f800000u;
    }
    return bad;
}

int loss_scale_update(loss_scale *s, int local_overflow)
{
    int overflow = local_overflow != 0;
    if (s->agree && hvd_is_initialized() && hvd_size() > 1) {
        /* OR over the ranks as a sum of 0/1 flags: a rank whose own gradients were fine still
         * skips when another's were not, so that the weights stay the same everywhere */
        float any = (float)overflow;
        hvd_allreduce(&any, 1, HVD_SUM, "LossScale.overflow");
        overflow = any > 0.0f;
    }
    if (overflow) {
        float next = s->scale * s->backoff;
        s->scale = next < s->min_scale ? s->min_scale : next;
        s->clean = 0;
        s->skipped++;
        if (trace_enabled())
            trace_event("loss_scale", "overflow=1 skipped=%ld scale=%.9g", s->skipped,
                        (double)s->scale);
        return 0;
    }
    if (++s->clean >= s->growth_interval) {
        float next = s->scale * s->growth;
        s->scale = next > s->max_scale ? s->max_scale : next;
        s->clean = 0;
        s->grown++;
        if (trace_enabled())
            trace_event("loss_scale", "overflow=0 grown=%ld scale=%.9g", s->grown,
                        (double)s->scale);
    }
    return 1;
}
