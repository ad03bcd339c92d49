/* resume.c — how a run goes on from a checkpoint, the whole story in order (resume.h).
 * Public: resume_batch, resume_validation.
 *
 * 1. Find (rank 0, in the step program, as Horovod's tutorial: ckpt.h's example):
 *    ckpt_latest_model (ckpt.h) makes the log directory ready and locks it (ckpt_dir.c,
 *    ckpt_lock.c; --restart moves an earlier run's files aside), then ckpt_latest_epoch
 *    (ckpt_files.c) picks the newest valid file that fits the model and optimizer: an
 *    end-of-epoch checkpoint-E.ckpt or a mid-epoch checkpoint-E.B.ckpt saved on a signal
 *    (stop.c); damaged files are renamed aside, never overwritten. Its E is resume_from_epoch.
 * 2. Load (rank 0, ckpt_load_model -> ckpt_load_params, ckpt_model.c): the weights and batch-norm
 *    statistics, the optimizer's state, step count and last learning rate (optim/: what
 *    optimizer_step goes on from), the model's step count (the dropout masks' key), and the
 *    file's resume block: the world size, images per batch and early-stop count of the run
 *    that saved it. The format and its field checks are ckpt/'s (ckpt_format.c, ckpt_check.c).
 * 3. Share (the step program): resume_from_epoch, the weights and the optimizer state are
 *    broadcast from rank 0 (hvd_broadcast_parameters, hvd_broadcast_optimizer_state).
 * 4. Where in the epoch (resume_batch, below, at the first epoch's start, on every rank): the
 *    rank that loaded a mid-epoch file checks its place against this run's data (check_place),
 *    the ranks that loaded the file tell the others the saved batch and the resume block
 *    (learn_saved_point), and the saved batch is counted in this run's batches (map_batch).
 * 5. What goes on counting (carry_on): the early stop (progress.c), a mid-epoch save on a
 *    signal (stop.c), and the resume block of every file this run writes (ckpt_model.c).
 * 6. Said once (say_resumed): a trace line, and rank 0's line after an elastic restart.
 * 7. Into the epoch: the training loader moves to the batch (loader_seek_batch), and the
 *    validation loader, at its first draw, to where the uninterrupted run's would stand
 *    (resume_validation, called by lab_evaluate).
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

/* What rank 0 read from the checkpoint (2), as every rank learns it (4). */
typedef struct {
    int batch;          /* batches of the epoch done when it was saved (0: end of epoch) */
    int world, b_was;   /* the saving run's ranks and images per batch (0: not recorded) */
    int early_stop;     /* its early-stop count */
} saved_point;

/* The rank that loaded a mid-epoch file checks that its place fits this run's training data
 * (ckpt_check_loaded_place: the resume block's fields are ckpt/'s to check). */
static void check_place(const loader *train)
{
    char err[ERRMSG_LEN];
    if (ckpt_check_loaded_place(train->available, err, sizeof err))
        fatal_error("%s", err);
}

/* The ranks that loaded the checkpoint know the batch and the world size it was saved with,
 * the others learn them: every rank is here, and the largest of {its value, 0, ...} is the
 * loader's. Four votes, once per run. */
static saved_point learn_saved_point(int epoch)
{
    saved_point s;
    vote_start(ckpt_found_batch(NULL, epoch));
    s.batch = vote_finish();
    vote_start(ckpt_loaded_world_size());
    s.world = vote_finish();
    vote_start(ckpt_loaded_batch_size());
    s.b_was = vote_finish();
    vote_start(ckpt_loaded_early_stop_count()); /* the early stop goes on counting */
    s.early_stop = vote_finish();
    return s;
}

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

/* The early stop's count, a signal's mid-epoch save, and what this run's files record. */
static void carry_on(const saved_point *s, int b_now)
{
    progress_restore_early_stop(s->early_stop);
    stop_allow_mid_epoch();
    ckpt_set_world_size(hvd_size()); /* what the files of this run record */
    ckpt_set_batch_size(b_now);
}

static void say_resumed(int epoch, const saved_point *s, int b_now, size_t steps)
{
    if (epoch > 0 || s->batch > 0) {
        trace_event("resume", "epoch=%d batch=%d saved_batch=%d world=%d was=%d "
                    "batch_size=%d batch_size_was=%d", epoch, first_batch, s->batch, hvd_size(),
                    s->world, b_now, s->b_was);
        if (elastic_on() && hvd_rank() == 0) /* the launcher restarted the job: said once */
            fprintf(stderr, "hvdlab: resumed at epoch %d step %d with %d ranks (was %d)\n",
                    epoch + 1, first_batch, hvd_size(), s->world > 0 ? s->world : hvd_size());
    }
    /* A checkpoint saved mid-epoch by a run with longer epochs: nothing of that epoch is
     * left here, said once. Only a smaller --train-subset does that: another batch size or
     * number of ranks maps the batch to the same place in the epoch (map_batch). */
    if (first_batch > 0 && (size_t)first_batch >= steps && hvd_rank() == 0)
        fprintf(stderr, "hvdlab: warning: resuming epoch %d at step %d, but this run's "
                "epochs have %zu steps (a smaller --train-subset than the checkpoint's run): "
                "nothing of epoch %d is left to train\n", epoch + 1, first_batch, steps,
                epoch + 1);
}

int resume_batch(loader *train, int epoch)
{
    if (first_epoch < 0) {
        check_place(train);
        const saved_point s = learn_saved_point(epoch);
        const int b_now = (int)train->opt.batch_size;
        first_batch = map_batch(s.batch, s.world, hvd_size(), s.b_was, b_now);
        first_epoch = epoch;
        carry_on(&s, b_now);
        say_resumed(epoch, &s, b_now, loader_num_batches(train));
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
