/* resume.c — the batch a resumed run starts its epoch at, and its validation loader's place
 * (resume.h).
 * Public: resume_batch, resume_validation.
 */
#include "train/resume.h"

#include "ckpt/ckpt.h"
#include "coll/hvd.h"
#include "coll/vote.h"
#include "train/stop.h"

static int first_epoch = -1, first_batch; /* decided at the first call */

int resume_batch(loader *train, int epoch)
{
    if (first_epoch < 0) {
        /* The ranks that loaded the checkpoint know the batch, the others learn it: every
         * rank is here, and the largest of {its batch, 0, ...} is that batch. */
        int mine = ckpt_found_batch(NULL, epoch);
        vote_start(mine);
        first_batch = vote_finish();
        first_epoch = epoch;
        stop_allow_mid_epoch();
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
