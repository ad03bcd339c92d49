/* emu_nccl.c — the CPU emulator's NCCL: communicators of one rank, on the one emulated GPU.
 *
 * With one rank an allreduce (sum or average) and a broadcast are a copy, so what this checks
 * is the kit's NCCL path around the calls: the communicator's set-up and shut-down, which
 * buffers reach NCCL (device memory only, whole: emu_memory.c's blocks), the stream waits and the
 * asynchronous-error polling. A communicator of several ranks fails as NCCL fails two ranks on
 * one GPU, with a message that says so: the emulator has one GPU, so a job of several ranks
 * stages through the host (HVD_GPU_OPERATIONS=auto) and a forced nccl one stops first.
 *
 * A non-blocking communicator (ncclConfig_t's blocking = 0) behaves as NCCL's: its init, its
 * finalize and its first collective return ncclInProgress, and ncclCommGetAsyncError says
 * ncclInProgress for a few polls before ncclSuccess. HVDLAB_EMU_NCCL_STALL=init or finalize
 * plays a peer that never arrives there: the state stays ncclInProgress (non-blocking), or the
 * call never returns (blocking), as NCCL waits for the missing rank.
 */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu_memory.h"

#define EMU_NCCL_POLLS 3 /* ncclInProgress answers before an operation is done */

struct ncclComm {
    int nranks;
    int nonblocking;
    int pending;   /* polls left saying ncclInProgress; -1: for ever (a stall) */
    int connected; /* the first collective done (NCCL connects the peers lazily) */
};

/* HVDLAB_EMU_NCCL_STALL names the step (init, finalize) where the peers never answer. */
static int stalls(const char *step)
{
    const char *v = getenv("HVDLAB_EMU_NCCL_STALL");
    return v && strcmp(v, step) == 0;
}

/* A step of comm that runs on in the background: ncclInProgress for a while (non-blocking), or
 * done on return; a stall never ends (blocking: the call does not return). */
static ncclResult_t in_progress(ncclComm_t comm, const char *step)
{
    const int stall = stalls(step);
    if (!comm->nonblocking) {
        while (stall)
            pause();
        return ncclSuccess;
    }
    comm->pending = stall ? -1 : EMU_NCCL_POLLS;
    return ncclInProgress;
}

static char last[200];

static ncclResult_t refuse(ncclResult_t r, const char *why)
{
    snprintf(last, sizeof last, "%s", why);
    return r;
}

const char *ncclGetErrorString(ncclResult_t r)
{
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    default: return "unhandled error in the CPU emulator's NCCL";
    }
}
const char *ncclGetLastError(ncclComm_t comm)
{
    (void)comm;
    return last;
}
ncclResult_t ncclGetVersion(int *version)
{
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}
ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    for (size_t i = 0; i < sizeof id->internal; i++)
        id->internal[i] = (char)(i * 7 + 1);
    return ncclSuccess;
}

static ncclResult_t one_rank(ncclComm_t *comm, int nranks, int nonblocking)
{
    *comm = NULL;
    if (nranks != 1)
        return refuse(ncclInvalidUsage, "the CPU emulator's NCCL has one GPU and one rank");
    *comm = calloc(1, sizeof **comm);
    if (!*comm)
        return refuse(ncclSystemError, "out of memory");
    (*comm)->nranks = 1;
    (*comm)->nonblocking = nonblocking;
    return in_progress(*comm, "init");
}
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t *config)
{
    (void)id;
    if (rank != 0 && nranks == 1)
        return refuse(ncclInvalidArgument, "rank out of range");
    return one_rank(comm, nranks, config && config->blocking == 0);
}
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    return ncclCommInitRankConfig(comm, nranks, id, rank, NULL);
}
ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
    if (ndev == 1 && devlist && devlist[0] != 0)
        return refuse(ncclInvalidArgument, "no such GPU");
    return one_rank(comm, ndev, 0);
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *err)
{
    if (!comm)
        return refuse(ncclInvalidArgument, "comm is NULL");
    if (comm->pending > 0)
        comm->pending--;
    *err = comm->pending ? ncclInProgress : ncclSuccess;
    return ncclSuccess;
}
ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
    return comm ? in_progress(comm, "finalize") : refuse(ncclInvalidArgument, "comm is NULL");
}
ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    if (comm && comm->pending) /* NCCL: after ncclCommFinalize's state is ncclSuccess */
        return refuse(ncclInvalidUsage, "ncclCommDestroy before the communicator's state left "
                      "ncclInProgress");
    free(comm);
    return ncclSuccess;
}
ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    free(comm);
    return ncclSuccess;
}
/* Inside a group the calls are only recorded: a non-blocking communicator's connection is
 * then ncclGroupEnd's ncclInProgress. */
static int group_depth;
static ncclComm_t group_connects;
ncclResult_t ncclGroupStart(void)
{
    group_depth++;
    return ncclSuccess;
}
ncclResult_t ncclGroupEnd(void)
{
    if (group_depth == 0)
        return refuse(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
    if (--group_depth || !group_connects)
        return ncclSuccess;
    group_connects->pending = EMU_NCCL_POLLS;
    group_connects = NULL;
    return ncclInProgress;
}

static size_t type_bytes(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
    }
}

/* One rank: recv = send, both whole in device memory (NCCL takes no host pointer), on stream. */
static ncclResult_t copy(const char *call, const void *send, void *recv, size_t count,
                         ncclDataType_t type, ncclComm_t comm, cudaStream_t stream)
{
    if (!comm)
        return refuse(ncclInvalidArgument, "comm is NULL");
    const size_t bytes = count * type_bytes(type);
    if (!emu_device_range(send, bytes) || !emu_device_range(recv, bytes)) {
        snprintf(last, sizeof last, "%s: %s (%zu bytes) is not inside one device block", call,
                 emu_device_range(send, bytes) ? "recvbuff" : "sendbuff", bytes);
        return ncclInvalidArgument;
    }
    if (comm->pending) /* NCCL's rule for a non-blocking communicator */
        return refuse(ncclInvalidUsage, "a call before the communicator's state left "
                      "ncclInProgress");
    /* queued on the stream, as NCCL's kernels are (emu_stream.h) */
    cudaMemcpyAsync(recv, send, bytes, cudaMemcpyDeviceToDevice, stream);
    if (comm->nonblocking && !comm->connected) { /* the first connects the peers */
        comm->connected = 1;
        if (group_depth) {
            group_connects = comm;
            return ncclSuccess;
        }
        comm->pending = EMU_NCCL_POLLS;
        return ncclInProgress;
    }
    return ncclSuccess;
}
ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    if (op != ncclSum && op != ncclAvg) /* the kit asks for no other */
        return refuse(ncclInvalidArgument, "ncclAllReduce: only ncclSum and ncclAvg here");
    return copy("ncclAllReduce", send, recv, count, type, comm, stream);
}
ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t type,
                           int root, ncclComm_t comm, cudaStream_t stream)
{
    if (root != 0)
        return refuse(ncclInvalidArgument, "ncclBroadcast: root out of range");
    return copy("ncclBroadcast", send, recv, count, type, comm, stream);
}
