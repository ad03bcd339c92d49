/* mpi_job.c — child MPI jobs for serial tests. See mpi_job.h. */
#include "lib/mpi_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "lib/mpirun_cmd.h"

mpi_job *mpi_job_run(const char *env, const char *launch)
{
    mpi_job *j = calloc(1, sizeof *j);
    if (!j)
        abort();
    char dflt[128], cmd[8192];
    snprintf(cmd, sizeof cmd, "env %s timeout 60 %s %s 2>&1", env ? env : "",
             mpirun_cmd(dflt, sizeof dflt), launch);
    FILE *p = popen(cmd, "r");
    if (!p)
        abort();
    size_t n = fread(j->out, 1, sizeof j->out - 1, p);
    j->out[n] = '\0';
    while (fgetc(p) != EOF) /* drain, so the job never blocks on a full pipe */
        ;
    int st = pclose(p);
    j->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return j;
}

void mpi_job_free(mpi_job *j) { free(j); }

size_t mpi_job_count(const mpi_job *j, const char *needle)
{
    size_t count = 0;
    for (const char *p = j->out; (p = strstr(p, needle)); p += strlen(needle))
        count++;
    return count;
}
