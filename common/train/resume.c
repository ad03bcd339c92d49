/* resume.c — the batch a resumed run starts its epoch at, and its validation loader's place
 * (resume.h).
 * Public: resume_batch, resume_validation.
 */
#include "train/resume.h"

#include <stdio.h>

#include "base/errmsg.h"
#include "base/fatal.h"
#include "base/trace.h"
#include "ckpt/ckpt.h"
#include "guard/vote.h"
#include "hvd/hvd.h"
#include "train/elastic.h"
#include "train/progress.h"
#include "train/stop.h"

static int first_epoch = -1, first_batch; /* decided at the first call */

/* A batch saved by `was` ranks of batches of `b_was` images each, as a batch of this run's
 * `now` ranks and `b_now` images (0: not recorded, taken as this run's). Rank r draws positions
 * r, r+size, ... of the epoch's permutation (loader.h), so `batch` batches of B on `was` ranks
 * are exactly the first batch*B*was positions; the new run starts where its own batches reach
 * no further, so at most now*b_now - 1 positions of that epoch are drawn a second time, none
 * skipped. */
static int map_batch(int batch, int was, int now, int b_was, int b_now)
{
    if (was <= 0)
        was = now;
    if (b_was <= 0)
        b_was = b_now;
    if (batch <= 0 || (long long)was * b_was == (long long)now * b_now)
        return batch;
    return (int)((long long)batch * was * b_was / ((long long)now * b_now));
}

int resume_batch(loader *train, int epoch)
{
    if (first_epoch < 0) {
        /* The ranks that loaded the checkpoint know the batch and the world size it was saved
         * with, the others learn them: every rank is here, and the largest of {its value, 0,
         * ...} is the loader's. Four votes, once per run. */
        char err[ERRMSG_LEN]; /* the rank that loaded a mid-epoch file checks its place */
        if (ckpt_check_loaded_place(train->available, err, sizeof err))
            fatal_error("%s", err);
        int mine = ckpt_found_batch(NULL, epoch);
        vote_start(mine);
        int saved = vote_finish();
        vote_start(ckpt_loaded_world_size());
        int was = vote_finish();
        vote_start(ckpt_loaded_batch_size());
        int b_was = vote_finish(), b_now = (int)train->opt.batch_size;
        vote_start(ckpt_loaded_early_stop_count()); /* the early stop goes on counting */
        progress_restore_early_stop(vote_finish());
        first_batch = map_batch(saved, was, hvd_size(), b_was, b_now);
        first_epoch = epoch;
        stop_allow_mid_epoch();
        ckpt_set_world_size(hvd_size()); /* what the files of this run record */
        ckpt_set_batch_size(b_now);
        if (epoch > 0 || saved > 0) {
            trace_event("resume", "epoch=%d batch=%d saved_batch=%d world=%d was=%d "
                        "batch_size=%d batch_size_was=%d", epoch, first_batch, saved, hvd_size(),
                        was, b_now, b_was);
            if (elastic_on() && hvd_rank() == 0) /* the launcher restarted the job: said once */
                fprintf(stderr, "hvdlab: resumed at epoch %d step %d with %d ranks (was %d)\n",
                        epoch + 1, first_batch, hvd_size(), was > 0 ? was : hvd_size());
        }
        /* A checkpoint saved mid-epoch by a run with longer epochs: nothing of that epoch is
         * left here, said once. Only a smaller --train-subset does that: another batch size or
         * number of ranks maps the batch to the same place in the epoch (map_batch). */
        size_t steps = loader_num_batches(train);
        if (first_batch > 0 && (size_t)first_batch >= steps && hvd_rank() == 0)
            fprintf(stderr, "hvdlab: warning: resuming epoch %d at step %d, but this run's "
                    "epochs have %zu steps (a smaller --train-subset than the checkpoint's run): "
                    "nothing of epoch %d is left to train\n", epoch + 1, first_batch, steps,
                    epoch + 1);
    }
    if (epoch != first_epoch || first_batch <= 0)
        return 0;
    loader_seek_batch(train, (size_t)first_batch);
    return first_batch;
}

void resume_validation(loader *val, int steps)
{
    static const loader *done; /* once per loader */
    if (first_epoch <= 0 || !val->opt.shuffle || val == done || steps <= 0)
        return;
    done = val;
    size_t nb = loader_num_batches(val);
    if (!nb)
        return;
    /* Where the uninterrupted run's loader_next_cyclic would stand after first_epoch epochs of
     * `steps` draws: a whole number of passes, then part of one. */
    size_t drawn = (size_t)first_epoch * (size_t)steps;
    loader_set_epoch(val, (int)(drawn / nb));
    loader_seek_batch(val, drawn % nb);
}
