/* mpirun_cmd.h — the launcher that tests and graders start child jobs with: $MPIRUN (the
 * Makefile passes mpirun with its flags), else mpirun --oversubscribe, plus
 * --allow-run-as-root when running as root. */
#ifndef HVDLAB_TESTS_MPIRUN_CMD_H
#define HVDLAB_TESTS_MPIRUN_CMD_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Returns $MPIRUN if set and non-empty, else the default written into buf. */
static inline const char *mpirun_cmd(char *buf, size_t len)
{
    const char *m = getenv("MPIRUN");
    if (m && *m)
        return m;
    snprintf(buf, len, "mpirun --oversubscribe%s", geteuid() == 0 ? " --allow-run-as-root" : "");
    return buf;
}

#endif
