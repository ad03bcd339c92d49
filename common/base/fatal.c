/* fatal.c — the kit's fatal-error line and exit. See fatal.h.
 * Public: fatal_error, fatal_set_rank, fatal_set_abort_hook. */
#include "base/fatal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/errmsg.h"

static int fatal_rank;
static void (*fatal_abort_job)(const char *msg);

void fatal_set_rank(int rank) { fatal_rank = rank; }
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
