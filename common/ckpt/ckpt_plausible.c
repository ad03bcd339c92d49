/* ckpt_plausible.c — whether the scalars of a checkpoint (its header and its resume block) can
 * be what a run wrote. The CRCs say a file is as its writer left it, not that the writer was
 * right: a file edited with its CRCs fixed up, or one from a buggy writer, would otherwise load
 * a NaN learning rate (the first step then diverges and blames --base-lr) or a world of 1000
 * ranks (the resume skips the rest of the epoch and blames --train-subset). See ckpt.h.
 * Public: ckpt_implausible, ckpt_implausible_place.
 */
#include "ckpt/ckpt.h"

#include <math.h>
#include <stdio.h>

int ckpt_implausible(const ckpt_data *d, char *what, size_t len)
{
    const ckpt_resume *r = &d->resume;
    if (d->cfg.depth < 1 || d->cfg.width < 1)
        snprintf(what, len, "depth %d, width %d (both at least 1)", d->cfg.depth, d->cfg.width);
    else if (!isfinite(d->cfg.dropout) || d->cfg.dropout < 0.0f || d->cfg.dropout >= 1.0f)
        snprintf(what, len, "dropout %g (from 0 up to 1, not 1)", (double)d->cfg.dropout);
    else if (d->epoch < 0)
        snprintf(what, len, "epoch %d (finished epochs, at least 0)", d->epoch);
    else if (!isfinite(d->last_lr) || d->last_lr < 0.0f)
        snprintf(what, len, "last_lr %g (a learning rate: finite, at least 0)",
                 (double)d->last_lr);
    else if (d->iterations < 0)
        snprintf(what, len, "iterations %ld (optimizer steps, at least 0)", d->iterations);
    else if (r->model_steps > (uint64_t)INT64_MAX)
        snprintf(what, len, "model_steps %llu (training batches, below 2^63)",
                 (unsigned long long)r->model_steps);
    else if (r->batch < 0)
        snprintf(what, len, "batch %d (batches of the epoch run, at least 0)", r->batch);
    else if (r->world_size < 0)
        snprintf(what, len, "world_size %d (ranks, at least 0: 0 is not recorded)", r->world_size);
    else if (r->batch_size < 0 || (unsigned)r->batch_size > WRN_MAX_BATCH)
        snprintf(what, len, "batch_size %d (images a batch, 0 (not recorded) to %u)",
                 r->batch_size, WRN_MAX_BATCH);
    else if (r->early_stop_count < 0 || r->early_stop_count > d->epoch)
        snprintf(what, len, "early_stop_count %d (epochs in a row above the target, 0 to the "
                 "file's epoch %d)", r->early_stop_count, d->epoch);
    else
        return 0;
    return 1;
}

int ckpt_implausible_place(const ckpt_resume *r, size_t images, char *what, size_t len)
{
    if (r->batch <= 0 || !images)
        return 0;
    /* The saved run drew batch*world*batch_size positions of its epoch's permutation, which
     * has at most `images` (its --train-subset, never more than the data). A product past
     * 64 bits is past any data set too. */
    const int world = r->world_size > 0 ? r->world_size : 1;
    const int size = r->batch_size > 0 ? r->batch_size : 1;
    uint64_t drawn;
    if (!__builtin_mul_overflow((uint64_t)r->batch, (uint64_t)world, &drawn) &&
        !__builtin_mul_overflow(drawn, (uint64_t)size, &drawn) && drawn <= images)
        return 0;
    snprintf(what, len, "batch %d, world_size %d, batch_size %d (%d batches of %d images on "
             "each of %d ranks are more than the %zu training images of an epoch)", r->batch,
             r->world_size, r->batch_size, r->batch, size, world, images);
    return 1;
}
