/* resume.c — the batch a resumed run starts its epoch at (resume.h).
 * Public: resume_batch.
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
