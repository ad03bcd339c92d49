/* nccl.c — the NCCL communicator and calls, in plain C. See nccl.h.
 * Public: nccl_version, nccl_probe, nccl_init, nccl_free, nccl_allreduce, nccl_allreduce_queue,
 *         nccl_wait, nccl_broadcast, nccl_allgather_to_host. */
#include "coll_gpu/nccl.h"

#include <stdio.h>
#include <string.h>

#ifdef HVDLAB_CUDA

#include <nccl.h>

#include "base/cuda_check.h"
#include "coll_gpu/gpu_keep.h"
#include "coll_gpu/gpu_wait.h"

/* The job's one NCCL communicator and its gather buffer. Owned by this file: nccl_init
 * (from gpu_ops_init) makes it, nccl_free (gpu_ops_shutdown) ends it. */
typedef struct {
    ncclComm_t comm;
    int rank, size;
    void *gather; /* nccl_allgather_to_host's device buffer: grows, freed by nccl_free */
    size_t gather_bytes;
} nccl_state;
static nccl_state nccl_job;

static void nccl_fail(const char *what, const char *call, ncclResult_t r)
    __attribute__((noreturn));
static void nccl_fail(const char *what, const char *call, ncclResult_t r)
{
    const char *last = ncclGetLastError(nccl_job.comm);
    fatal_error("%s: %s failed: %s%s%s", what, call, ncclGetErrorString(r),
                last && *last ? ": " : "", last ? last : "");
}

/* A call on the non-blocking communicator may answer ncclInProgress (its set-up, its
 * shut-down, a collective that connects the peers): the state is then polled with gpu_wait's
 * bounds before anything else touches NCCL or the stream. Else r must be ncclSuccess. */
static void nccl_settle(const char *what, const char *call, ncclResult_t r)
{
    if (r == ncclInProgress && nccl_job.comm) {
        char label[256];
        snprintf(label, sizeof label, "%s: %s", what, call);
        gpu_wait_nccl(nccl_job.comm, label);
    } else if (r != ncclSuccess) {
        nccl_fail(what, call, r);
    }
}

/* The call is named as written (its name up to the parenthesis); NCCL's own message follows. */
#define NCCL_CALL(what, call)                                                                      \
    do {                                                                                           \
        char nccl_name_[] = #call;                                                                 \
        nccl_name_[strcspn(nccl_name_, "(")] = '\0';                                               \
        nccl_settle(what, nccl_name_, (call));                                                     \
    } while (0)

void nccl_version(char *out, size_t len)
{
    int v = 0;
    if (ncclGetVersion(&v) != ncclSuccess || v <= 0) {
        snprintf(out, len, "unknown");
        return;
    }
    snprintf(out, len, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
}

int nccl_probe(char *why, size_t len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n <= 0) {
        snprintf(why, len, "no GPU visible: %s",
                 e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        (void)cudaGetLastError();
        return -1;
    }
    ncclComm_t c;
    int dev = 0;
    ncclResult_t r = ncclCommInitAll(&c, 1, &dev);
    if (r != ncclSuccess) {
        snprintf(why, len, "ncclCommInitAll: %s", ncclGetErrorString(r));
        return -1;
    }
    ncclCommDestroy(c);
    return 0;
}

void nccl_init(MPI_Comm comm, int rank, int size)
{
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (rank == 0)
        NCCL_CALL("NCCL set-up", ncclGetUniqueId(&id));
    MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, comm); /* host bytes */
    nccl_job.rank = rank;
    nccl_job.size = size;
    /* Non-blocking: a blocking init waits for every rank with no limit, so one that died or
     * never came would hold the others for ever. This one returns at once and is polled with
     * gpu_wait's bounds (NCCL's documented way; on time out the job ends, gpu_wait.c). */
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    NCCL_CALL("NCCL set-up", ncclCommInitRankConfig(&nccl_job.comm, size, id, rank, &config));
}

/* ncclCommFinalize waits for the peers too: bounded the same way. Once its state is
 * ncclSuccess, ncclCommDestroy frees what is left without waiting; nothing is polled after it
 * (the communicator is gone), so ncclInProgress from it counts as done. */
void nccl_free(void)
{
    gpu_keep(nccl_job.gather, GPU_KEEP_DEVICE); /* freed by gpu_ops_shutdown, next */
    nccl_job.gather = NULL;
    nccl_job.gather_bytes = 0;
    if (!nccl_job.comm)
        return;
    NCCL_CALL("NCCL shut-down", ncclCommFinalize(nccl_job.comm));
    ncclComm_t c = nccl_job.comm;
    nccl_job.comm = NULL;
    ncclResult_t r = ncclCommDestroy(c);
    if (r != ncclSuccess && r != ncclInProgress)
        nccl_fail("NCCL shut-down", "ncclCommDestroy", r);
}

void nccl_allreduce_queue(void *buf, size_t count, int half, int avg, cudaStream_t s,
                          const char *what)
{
    NCCL_CALL(what, ncclAllReduce(buf, buf, count, half ? ncclHalf : ncclFloat,
                                  avg ? ncclAvg : ncclSum, nccl_job.comm, s));
}

void nccl_wait(cudaStream_t s, const char *what) { gpu_wait(s, nccl_job.comm, what); }

void nccl_allreduce(void *buf, size_t count, int half, int avg, cudaStream_t s, const char *what)
{
    nccl_allreduce_queue(buf, count, half, avg, s, what);
    nccl_wait(s, what);
}

void nccl_broadcast(void *buf, size_t nbytes, int root, cudaStream_t s, const char *what)
{
    NCCL_CALL(what, ncclBroadcast(buf, buf, nbytes, ncclUint8, root, nccl_job.comm, s));
    nccl_wait(s, what);
}

void nccl_allgather_to_host(const float *send, int send_host, float *out, const size_t *counts,
                            const size_t *displs, size_t total, cudaStream_t s, const char *what)
{
    if (total == 0)
        return; /* every rank knows every count: all return alike */
    /* Kept from call to call: a cudaFree here would wait for the whole device (gpu_keep.h) */
    float *recv = gpu_keep_device(&nccl_job.gather, &nccl_job.gather_bytes, total * sizeof *recv);
    if (send_host && counts[nccl_job.rank]) { /* up into its own slot, broadcast from there */
        CUDA_CHECK(cudaMemcpyAsync(recv + displs[nccl_job.rank], send,
                                   counts[nccl_job.rank] * sizeof *recv,
                                   cudaMemcpyHostToDevice, s));
        send = recv + displs[nccl_job.rank];
    }
    NCCL_CALL(what, ncclGroupStart());
    for (int r = 0; r < nccl_job.size; r++) {
        if (!counts[r])
            continue;
        const void *src =
            r == nccl_job.rank ? (const void *)send : (const void *)(recv + displs[r]);
        NCCL_CALL(what,
                  ncclBroadcast(src, recv + displs[r], counts[r], ncclFloat, r, nccl_job.comm, s));
    }
    NCCL_CALL(what, ncclGroupEnd());
    nccl_wait(s, what); /* before a copy to pageable memory, which would block unbounded */
    CUDA_CHECK(cudaMemcpyAsync(out, recv, total * sizeof *recv, cudaMemcpyDeviceToHost, s));
    nccl_wait(s, what);
}

#else

void nccl_version(char *out, size_t len) { snprintf(out, len, "none"); }

int nccl_probe(char *why, size_t len)
{
    snprintf(why, len, "build with make CUDA=1");
    return -1;
}

#endif
