/* dead_rank.c — the training's part of a dead rank's line. See dead_rank.h.
 * Public: dead_rank_watch, dead_rank_at. */
#include "train/dead_rank.h"

#include <signal.h>
#include <stdio.h>

#include "base/errmsg.h"
#include "ckpt/ckpt.h"
#include "guard/watchdog.h"
#include "hvd/hvd.h"

static char log_dir[ARGS_PATH_LEN];
static int checkpointing;
/* Written by the training thread, read by the watchdog's: whole ints, each on its own. */
static volatile sig_atomic_t at_epoch = -1, at_done, at_steps;

void dead_rank_at(int epoch, int done, int steps)
{
    at_epoch = epoch;
    at_done = done;
    at_steps = steps;
}

static void say(char *out, size_t len)
{
    int e = at_epoch, d = at_done, s = at_steps;
    size_t o = 0;
    if (e < 0)
        o = (size_t)snprintf(out, len, "this rank had not finished a training step yet");
    else
        o = (size_t)snprintf(out, len, "this rank was in epoch %d after batch %d/%d (the ranks "
                             "move in step)", e + 1, d, s);
    if (o >= len)
        return;
    out += o;
    len -= o;
    int ce = 0, cb = 0;
    char path[4200];
    if (!checkpointing)
        snprintf(out, len, "; --use-checkpointing is off: nothing was saved");
    else if (ckpt_newest_valid(log_dir, &ce, &cb) != 0 && hvd_rank() != 0)
        snprintf(out, len, "; no checkpoint in %s as this rank sees it (rank 0 writes them, "
                 "on its host's disk)", log_dir);
    else if (cb == 0 && ce == 0)
        snprintf(out, len, "; no checkpoint in %s yet: a run with --use-checkpointing starts "
                 "from scratch", log_dir);
    else if (ckpt_path_at(path, sizeof path, log_dir, ce, cb) == 0 && cb > 0)
        snprintf(out, len, "; run the same command again to resume in epoch %d after "
                 "batch %d from %s, the newest valid checkpoint there", ce + 1, cb, path);
    else
        snprintf(out, len, "; run the same command again to resume after epoch %d from "
                 "%s, the newest valid checkpoint there", ce, path);
}

void dead_rank_watch(const args *a)
{
    snprintf(log_dir, sizeof log_dir, "%s", a->log_dir);
    checkpointing = a->use_checkpointing;
    watchdog_set_context(say);
}
