/* gpu_wait.c — bounded stream waits. See gpu_wait.h.
 * Public: gpu_wait_set_bounds, gpu_wait, gpu_wait_nccl. */
#ifdef HVDLAB_CUDA

#include "coll_gpu/gpu_wait.h"

#include <sched.h>
#include <stdio.h>
#include <time.h>

#include "base/fatal.h"
#include "base/timer.h"

static double warn_after = 60.0, stop_after = 600.0;
static int my_rank;

void gpu_wait_set_bounds(int rank, double warn_s, double limit_s)
{
    my_rank = rank;
    warn_after = warn_s;
    stop_after = limit_s;
}

/* Short waits spin (a small collective finishes in microseconds); long ones nap. */
static void relax(double waited)
{
    if (waited < 1e-3) {
        sched_yield();
        return;
    }
    struct timespec ts = {0, 50 * 1000};
    nanosleep(&ts, NULL);
}

static void check_async(ncclComm_t comm, const char *what)
{
    ncclResult_t async = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(comm, &async);
    if (r != ncclSuccess)
        fatal_error("%s: ncclCommGetAsyncError: %s", what, ncclGetErrorString(r));
    if (async == ncclSuccess || async == ncclInProgress)
        return;
    char last[512];
    const char *l = ncclGetLastError(comm);
    snprintf(last, sizeof last, "%s", l && *l ? l : "no detail");
    /* no ncclCommAbort first: see watch_clock */
    fatal_error("%s: NCCL error found by ncclCommGetAsyncError: %s (%s)", what,
                ncclGetErrorString(async), last);
}

/* One warning past warn_after, the stop past stop_after; where is "on the GPU" or "in NCCL". */
static void watch_clock(double t0, int *warned, const char *what, const char *where)
{
    double waited = timer_seconds() - t0;
    if (!*warned && warn_after > 0 && waited > warn_after) {
        fprintf(stderr, "hvdlab: warning: [rank %d] %s: still running %s after %.0f s (is a "
                "rank stopped?)\n", my_rank, what, where, waited);
        fflush(stderr);
        *warned = 1;
    }
    if (stop_after > 0 && waited > stop_after) {
        /* No ncclCommAbort before the line: it can hang itself (NVIDIA/nccl issues 863, 992,
         * 1777), and then neither the line nor the MPI_Abort that ends every rank would come.
         * The job ends here; the driver frees what the processes held on the GPU. */
        fatal_error("%s: no progress %s for %.0f s (a rank stopped, never arrived or a link is "
                    "down); stopping the job", what, where, waited);
    }
    relax(waited);
}

void gpu_wait(cudaStream_t s, ncclComm_t comm, const char *what)
{
    double t0 = timer_seconds();
    int warned = 0;
    for (;;) {
        cudaError_t q = cudaStreamQuery(s);
        if (q == cudaSuccess)
            return;
        if (q != cudaErrorNotReady)
            fatal_error("%s: cudaStreamQuery: %s (%d)", what, cudaGetErrorString(q), (int)q);
        if (comm)
            check_async(comm, what);
        watch_clock(t0, &warned, what, "on the GPU");
    }
}

void gpu_wait_nccl(ncclComm_t comm, const char *what)
{
    double t0 = timer_seconds();
    int warned = 0;
    for (;;) {
        ncclResult_t state = ncclInProgress;
        ncclResult_t r = ncclCommGetAsyncError(comm, &state);
        if (r != ncclSuccess)
            fatal_error("%s: ncclCommGetAsyncError: %s", what, ncclGetErrorString(r));
        if (state == ncclSuccess)
            return;
        check_async(comm, what); /* an error: one line, the job ends */
        watch_clock(t0, &warned, what, "in NCCL");
    }
}

#endif
