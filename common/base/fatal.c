/* fatal.c — the kit's fatal-error line and exit, and its warnings said once. See fatal.h.
 * Public: fatal_error, fatal_set_rank, fatal_job_rank, fatal_set_abort_hook, fatal_warn. */
#include "base/fatal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/errmsg.h"

static int fatal_rank, fatal_local_rank;
static void (*fatal_abort_job)(const char *msg);

void fatal_set_rank(int rank, int local_rank)
{
    fatal_rank = rank;
    fatal_local_rank = local_rank;
}
int fatal_job_rank(void) { return fatal_rank; }
void fatal_set_abort_hook(void (*abort_job)(const char *msg)) { fatal_abort_job = abort_job; }

void fatal_error(const char *fmt, ...)
{
    char msg[ERRMSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fflush(stdout);
    fprintf(stderr, "hvdlab: error: [rank %d] %s\n", fatal_rank, msg);
    fflush(stderr);
    if (fatal_abort_job)
        fatal_abort_job(msg); /* takes every rank down: nobody waits forever */
    exit(EXIT_FAILURE);
}

void fatal_warn(fatal_scope scope, const char *fmt, ...)
{
    if ((scope == FATAL_ONCE_PER_JOB && fatal_rank != 0) ||
        (scope == FATAL_ONCE_PER_HOST && fatal_local_rank != 0))
        return;
    char msg[ERRMSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "hvdlab: warning: %s\n", msg);
}
