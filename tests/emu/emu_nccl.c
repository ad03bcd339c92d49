/* emu_nccl.c — the CPU emulator's NCCL: communicators of one rank, on the one emulated GPU.
 *
 * With one rank an allreduce (sum or average) and a broadcast are a copy, so what this checks
 * is the kit's NCCL path around the calls: the communicator's set-up and shut-down, which
 * buffers reach NCCL (device memory only, whole: emu_memory.c's blocks), the stream waits and the
 * asynchronous-error polling. A communicator of several ranks fails as NCCL fails two ranks on
 * one GPU, with a message that says so: the emulator has one GPU, so a job of several ranks
 * stages through the host (HVD_GPU_OPERATIONS=auto) and a forced nccl one stops first.
 */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

#include "emu_memory.h"

struct ncclComm {
    int nranks;
};

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

static ncclResult_t one_rank(ncclComm_t *comm, int nranks)
{
    *comm = NULL;
    if (nranks != 1)
        return refuse(ncclInvalidUsage, "the CPU emulator's NCCL has one GPU and one rank");
    *comm = malloc(sizeof **comm);
    if (!*comm)
        return refuse(ncclSystemError, "out of memory");
    (*comm)->nranks = 1;
    return ncclSuccess;
}
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    (void)id;
    if (rank != 0 && nranks == 1)
        return refuse(ncclInvalidArgument, "rank out of range");
    return one_rank(comm, nranks);
}
ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
    if (ndev == 1 && devlist && devlist[0] != 0)
        return refuse(ncclInvalidArgument, "no such GPU");
    return one_rank(comm, ndev);
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *err)
{
    *err = ncclSuccess;
    return comm ? ncclSuccess : refuse(ncclInvalidArgument, "comm is NULL");
}
ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
    return comm ? ncclSuccess : refuse(ncclInvalidArgument, "comm is NULL");
}
ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    free(comm);
    return ncclSuccess;
}
ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    free(comm);
    return ncclSuccess;
}
ncclResult_t ncclGroupStart(void) { return ncclSuccess; }
ncclResult_t ncclGroupEnd(void) { return ncclSuccess; }

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
    /* queued on the stream, as NCCL's kernels are (emu_stream.h) */
    cudaMemcpyAsync(recv, send, bytes, cudaMemcpyDeviceToDevice, stream);
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
