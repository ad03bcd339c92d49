/* lr.c — LR scaling, warmup, step schedules and the lab's schedule. See lr.h.
 * Public: lr_scaled, lr_warmup_at, lr_schedule_apply, lr_corrected_momentum, lr_lab_init,
 * lr_lab_at, lr_lab_position, lr_lab_epoch_end.
 *
 * Semantics follow Horovod's Keras callbacks (horovod/_keras/callbacks.py, releases up to 0.22):
 * LearningRateScheduleCallbackImpl and LearningRateWarmupCallbackImpl. Warmup: Goyal et al.,
 * "Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour", arXiv:1706.02677.
 */
#include "optim/lr.h"

#include <math.h>

#include "base/errmsg.h"

float lr_scaled(float base_lr, int size) { return base_lr * (float)(size > 0 ? size : 1); }

float lr_warmup_at(float lr, int size, int warmup_epochs, int steps_per_epoch, int epoch,
                   int batch)
{
    if (warmup_epochs <= 0 || size <= 1)
        return lr; /* no warmup; with one worker the multiplier is 1 throughout */
    double spe = steps_per_epoch > 0 ? steps_per_epoch : 1;
    /* Horovod: epoch + batch/spe, then "+= 1/spe so that each epoch ends on a round number". */
    double e = ((double)epoch * spe + (double)batch + 1.0) / spe;
    /* warmup·(e(size−1)/warmup + 1), over warmup·size: exactly 1 at e = warmup */
    double num = e * (double)(size - 1) + (double)warmup_epochs;
    return (float)((double)lr * num / ((double)warmup_epochs * (double)size));
}

int lr_schedule_apply(const lr_schedule *s, float initial_lr, int epoch, int batch,
                      int steps_per_epoch, float *lr)
{
    if (epoch < s->start_epoch || (s->end_epoch >= 0 && epoch >= s->end_epoch))
        return 0; /* outside [start, end) */
    double m;
    if (!s->fn || s->staircase) {
        if (batch != 0)
            return 0; /* staircase: the LR set at the epoch's first batch stays */
        m = s->fn ? s->fn((double)epoch, s->ctx) : s->multiplier;
    } else {
        double spe = steps_per_epoch > 0 ? steps_per_epoch : 1;
        m = s->fn((double)epoch + (double)batch / spe, s->ctx);
    }
    *lr = (float)((double)initial_lr * m);
    return 1;
}

float lr_corrected_momentum(float momentum, float new_lr, float old_lr)
{
    if (old_lr <= 0.0f || new_lr == old_lr)
        return momentum;
    return (float)((double)momentum * (double)new_lr / (double)old_lr);
}

/* The lab's schedule callbacks. The DLI script passes absolute LRs as Horovod multipliers
 * (multiplier = base_lr·0.1 and so on, while Horovod multiplies initial_lr = base_lr·size by
 * it), so base_lr is applied twice there; what the lab means, and what hvdlab does, is the
 * usual step decay of the scaled LR: ×1, ×0.1, ×0.01, ×0.001. */
static const struct {
    int end;
    double mult;
} LAB_STEPS[LR_LAB_MAX_STEPS] = {{15, 1.0}, {25, 1e-1}, {35, 1e-2}, {-1, 1e-3}};

int lr_lab_init(lr_lab *s, float lr, int size, int warmup_epochs, int steps_per_epoch,
                int verbose, char *err, size_t errlen)
{
    if (!(lr > 0.0f) || !isfinite(lr)) /* inf: --base-lr x size beyond a float's range */
        return errmsg_set(err, errlen, "lr_lab_init", "learning rate %g must be finite and > 0%s",
                          lr, isinf(lr) ? " (--base-lr times the ranks is beyond a float's range)"
                                        : "");
    if (size < 1)
        return errmsg_set(err, errlen, "lr_lab_init", "size %d must be >= 1", size);
    if (warmup_epochs < 0)
        return errmsg_set(err, errlen, "lr_lab_init", "warmup_epochs %d must be >= 0",
                          warmup_epochs);
    if (steps_per_epoch < 1)
        return errmsg_set(err, errlen, "lr_lab_init", "steps_per_epoch %d must be >= 1",
                          steps_per_epoch);
    *s = (lr_lab){.lr = lr, .size = size, .warmup_epochs = warmup_epochs,
                  .steps_per_epoch = steps_per_epoch, .out = verbose ? stdout : NULL};
    int start = warmup_epochs;
    for (int i = 0; i < LR_LAB_MAX_STEPS; i++) {
        s->steps[s->nsteps++] = (lr_schedule){.start_epoch = start, .end_epoch = LAB_STEPS[i].end,
                                              .multiplier = LAB_STEPS[i].mult, .staircase = 1};
        start = LAB_STEPS[i].end;
    }
    return 0;
}

/* The callbacks in the lab's order (warmup, then the schedules) at one batch: the last one
 * that adjusts wins, as in Keras's on_batch_begin. Returns 0 when none adjusts here. */
static int lab_adjust(const lr_lab *s, int epoch, int batch, float *lr)
{
    int set = 0;
    if (epoch < s->warmup_epochs) {
        *lr = lr_warmup_at(s->lr, s->size, s->warmup_epochs, s->steps_per_epoch, epoch, batch);
        set = 1;
    }
    for (int i = 0; i < s->nsteps; i++)
        set |= lr_schedule_apply(&s->steps[i], s->lr, epoch, batch, s->steps_per_epoch, lr);
    return set;
}

static float lab_lr(const lr_lab *s, int epoch, int batch)
{
    /* The optimizer keeps the last LR written. Warmup writes before every batch and the
     * staircase steps at each epoch's first batch, so the LR in force is the one written at
     * this batch or else at batch 0 of this epoch (every epoch has a writer there). */
    float lr = s->lr;
    if (!lab_adjust(s, epoch, batch, &lr))
        lab_adjust(s, epoch, 0, &lr);
    return lr;
}

/* The step programs ask for the LR once per batch, just before optimizer_step: remembering the
 * question tells a layer that must stop the run where the loop is, without threading the
 * position through every call. One training loop per process, so one record. */
static lr_position last_position;

float lr_lab_at(const lr_lab *s, int epoch, int batch)
{
    float lr = lab_lr(s, epoch, batch);
    last_position = (lr_position){1, epoch, batch, s->steps_per_epoch, s->warmup_epochs, s->size,
                                  lr, s->lr};
    return lr;
}

lr_position lr_lab_position(void) { return last_position; }

int lr_lab_epoch_end(lr_lab *s, int epoch)
{
    if (s->warmup_epochs <= 0 || epoch != s->warmup_epochs - 1 || s->announced)
        return 0;
    s->announced = 1;
    if (!s->out)
        return 0;
    /* Horovod: print('\nEpoch %d: finished gradual learning rate warmup to %g.' % (epoch + 1,
     * new_lr)) — Keras numbers epochs from 1 when printing. */
    fprintf(s->out, "\nEpoch %d: finished gradual learning rate warmup to %g.\n", epoch + 1,
            (double)lab_lr(s, epoch, s->steps_per_epoch - 1));
    fflush(s->out);
    return 1;
}
