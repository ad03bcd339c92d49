/* mpi_job.h — run a child MPI job from a serial test and keep what it printed.
 *
 * mpi_job_run("ENV=1", "-n 2 prog args") runs `env ENV=1 timeout 60 MPIRUN -n 2 prog args`
 * (MPIRUN from mpirun_cmd.h) with stdout and stderr together. status: the job's exit status,
 * 124 when the timeout ended it. mpi_job_count: how many lines hold a string. */
#ifndef HVDLAB_TESTS_MPI_JOB_H
#define HVDLAB_TESTS_MPI_JOB_H

#include <stddef.h>

typedef struct {
    int status;
    char out[32768];
} mpi_job;

mpi_job *mpi_job_run(const char *env, const char *launch);
void mpi_job_free(mpi_job *j);
size_t mpi_job_count(const mpi_job *j, const char *needle);

#endif
