/* loss_scale.h — dynamic loss scaling for fp16 training (host logic, CPU and GPU models alike).
 *
 * fp16 holds gradients from about 6e-8 to 65504: small ones vanish unless the loss, and so every
 * gradient, is multiplied by a scale S before the backward pass. The weights and the optimizer
 * state stay fp32 (the master copy); before the update the gradients are divided by S again.
 * S is found as the run goes, as torch.cuda.amp.GradScaler and Apex's dynamic scaler find it:
 *
 *   start      S = init_scale (2^16)
 *   each step  after the gradients are averaged, divide them by S and look for NaN or Inf;
 *              any rank's overflow counts for all (one allreduce of a flag), so every rank
 *              skips or applies alike and the weights stay identical
 *   overflow   skip the update (weights, optimizer state and iterations unchanged),
 *              S *= backoff (0.5), not below min_scale; the clean-step count restarts
 *   clean      after growth_interval (2000) clean steps in a row, S *= growth (2), up to max_scale
 *
 *   loss_scale ls = loss_scale_defaults();
 *   opt->loss_scale = &ls;           // optimizer_step unscales, checks, skips or applies
 *   ... the model's loss gradient multiplied by ls.scale before the backward pass ...
 *
 * The state is a few numbers, not part of the checkpoint: a resumed run starts again from
 * init_scale and backs off within a few steps (each a skipped step) if that is too large.
 *
 * Public: loss_scale_defaults, loss_scale_unscale, loss_scale_update.
 */
#ifndef HVDLAB_LOSS_SCALE_H
#define HVDLAB_LOSS_SCALE_H

#include <stddef.h>

typedef struct loss_scale {
    float scale;          /* S: the loss (and so each gradient) is multiplied by it */
    float growth;         /* S *= growth after growth_interval clean steps (2) */
    float backoff;        /* S *= backoff on an overflow (0.5) */
    int growth_interval;  /* clean steps in a row before S grows (2000) */
    float min_scale;      /* S never backs off below this (1) */
    float max_scale;      /* nor grows above this (2^24) */
    int agree;            /* 1: the overflow flag is OR-ed over all ranks (hvd_allreduce) */
    /* progress */
    int clean;            /* clean steps since the last overflow or growth */
    long skipped;         /* steps skipped for an overflow */
    long grown;           /* times S grew */
} loss_scale;

/* init_scale 2^16, growth 2, backoff 0.5, growth_interval 2000, min 1, max 2^24, agree 1. */
loss_scale loss_scale_defaults(void);

/* g[i] /= S (an exact multiply by 1/S: S is a power of two while growth and backoff are);
 * returns how many of the results are NaN or Inf. */
size_t loss_scale_unscale(const loss_scale *s, float *g, size_t n);

/* One step's verdict from this rank's overflow (non-zero: its gradients held NaN or Inf).
 * With s->agree and more than one rank, every rank must call it at the same step (one
 * allreduce). Returns 1: apply the update; 0: skip it. Updates S and the counts. */
int loss_scale_update(loss_scale *s, int local_overflow);

#endif
