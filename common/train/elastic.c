/* elastic.c — commits every K batches and the stop to grow at a commit (elastic.h).
 * Public: elastic_on, elastic_step, elastic_epoch_end.
 */
#include "train/elastic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/env_switch.h"
#include "base/errmsg.h"
#include "base/fatal.h"
#include "base/timer.h"
#include "base/trace.h"
#include "ckpt/ckpt.h"
#include "hvd/hvd.h"
#include "train/stop.h"

/* HVDLAB_ELASTIC's settings and the last commit written. Owned by this file, read from the
 * environment at its first use. */
typedef struct {
    int read;             /* the environment was read */
    int on;               /* HVDLAB_ELASTIC */
    int every;            /* HVDLAB_ELASTIC_COMMIT_STEPS */
    const char *notify;   /* HVDLAB_ELASTIC_NOTIFY */
    char last[4200];      /* the previous commit this process wrote ("" none) */
} elastic_state;
static elastic_state elastic;

static void read_env(void)
{
    if (elastic.read)
        return;
    elastic.read = 1;
    elastic.on = env_switch("HVDLAB_ELASTIC", 0); /* false or no must not turn it on */
    const char *v = getenv("HVDLAB_ELASTIC_COMMIT_STEPS");
    if (v && *v) {
        char *end;
        long k = strtol(v, &end, 10);
        if (*end || k < 0 || k > 1000000000L)
            fatal_error("HVDLAB_ELASTIC_COMMIT_STEPS=%s: expected a number of batches >= 0", v);
        elastic.every = (int)k;
    }
    v = getenv("HVDLAB_ELASTIC_NOTIFY");
    elastic.notify = v && *v ? v : NULL;
}

int elastic_on(void)
{
    read_env();
    return elastic.on;
}

/* Rank 0 (the checkpoint target): writes the commit, then drops the one before it. */
static void commit(int epoch, int done)
{
    char path[sizeof elastic.last], err[ERRMSG_LEN], q[sizeof path + 16];
    double t = timer_seconds();
    if (ckpt_save_target(epoch, done, path, sizeof path, err, sizeof err) != 0)
        fatal_error("elastic commit: %s", err);
    double ms = 1e3 * (timer_seconds() - t);
    trace_event("commit", "epoch=%d batch=%d iter=%ld ms=%.2f sum=%016llx path=%s", epoch, done,
                ckpt_target_iterations(), ms, (unsigned long long)ckpt_target_checksum(),
                trace_quote(path, q, sizeof q));
    if (elastic.last[0] && strcmp(elastic.last, path) != 0)
        unlink(elastic.last); /* the new commit is durable (fsynced, renamed, dir fsynced) */
    snprintf(elastic.last, sizeof elastic.last, "%s", path);
}

void elastic_step(int epoch, int done, int steps)
{
    read_env();
    if (elastic.every <= 0 || done % elastic.every != 0 || done >= steps)
        return; /* an epoch's last batch: the program's own end-of-epoch checkpoint commits it */
    if (ckpt_has_target())
        commit(epoch, done);
    if (!elastic.notify)
        return;
    int grow = hvd_rank() == 0 && access(elastic.notify, F_OK) == 0;
    hvd_broadcast_bytes(&grow, sizeof grow, 0, "elastic.notify");
    if (!grow)
        return;
    trace_event("elastic_stop", "epoch=%d batch=%d", epoch, done);
    if (hvd_rank() == 0)
        fprintf(stderr, "hvdlab: elastic: more slots announced: stopping after the commit at "
                "epoch %d batch %d/%d\n", epoch + 1, done, steps);
    fflush(stdout);
    fflush(stderr);
    stop_settle();  /* the stop vote started at this step: no request may outlive MPI */
    hvd_shutdown(); /* every rank is here, at the same batch */
    exit(ELASTIC_EXIT_RESIZE);
}

void elastic_epoch_end(int epochs_done)
{
    read_env();
    if (!elastic.on || hvd_rank() != 0 || !ckpt_has_target())
        return;
    if (ckpt_drop_mid_epoch(ckpt_target_dir(), epochs_done) > 0)
        elastic.last[0] = '\0'; /* removed with the others */
}
