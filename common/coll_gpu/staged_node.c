/* staged_node.c — node_stage.h's ops on the GPU. See staged_node.h.
 * Public: staged_node_usable, staged_node_allreduce, staged_node_free. */
#ifdef HVDLAB_CUDA

#include "coll_gpu/staged_node.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cuda_check.h"
#include "coll/allreduce.h"
#include "coll_gpu/fusion_cuda.h"
#include "coll_gpu/gpu_ops.h"
#include "coll_gpu/gpu_wait.h"
#include "coll_gpu/ipc_window.h"
#include "coll_gpu/node_stage.h"

/* The slots on the GPU (HVDLAB_STAGED_REDUCE=ipc) are this many times the host's: a copy within
 * the GPU moves a host piece in a few microseconds, less than one barrier, so larger pieces keep
 * the barriers from ruling (32 MiB: 64 MiB of GPU memory per rank). */
#define IPC_PIECE_FACTOR 8

/* The host's staging window and the GPUs' one. Owned by this file: opened at the first
 * large group, released by staged_node_free (allreduce_free, through the window's user hook). */
typedef struct {
    int ready;        /* w and wi initialised on the host's node */
    int refused;      /* a rank could not pin the window, and wi is not open: the CPU adds, for
                         the job's life */
    int host_refused; /* a rank could not pin the window, but wi is open: the CPU adds the groups
                         below the IPC size, wi takes the rest */
    node_stage w;     /* the host's window (HVDLAB_STAGED_REDUCE gpu, auto below the IPC size) */
    node_stage wi;    /* the slots on the GPUs (ipc; auto from gpu_ops_node_ipc_min_bytes) */
    ipc_window ipc;   /* wi's slots, when open */
    int on_gpu;       /* 1: wi's slots are open on every rank */
    char *pinned;     /* the window's slots as registered with CUDA (NULL: not yet) */
    char *scratch;    /* device, host window only: one piece per rank, the others' come up here */
    size_t scratch_bytes;
    const void **x;   /* the L pieces one sum adds (fusion_cuda_sum_ranks) */
    cudaStream_t up;  /* the others' pieces up and the sums; the copies down go on the ops stream */
} staged_node_state;
static staged_node_state stage;

/* One call's ops context: where its copies down go, its name for errors, and which window. */
typedef struct {
    cudaStream_t down;
    const char *what;
    int on_gpu; /* 1: wi's slots, on the GPUs; 0: w's, in the host's window */
} call_ctx;

static void down(void *ctx, const char *buf, char *slot, size_t bytes)
{
    const call_ctx *c = ctx;
    CUDA_CHECK(cudaMemcpyAsync(slot, buf, bytes,
                               c->on_gpu ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost,
                               c->down));
}

static void down_wait(void *ctx)
{
    const call_ctx *c = ctx;
    gpu_wait(c->down, NULL, c->what);
}

/* The host's window: the others' pieces up into the scratch first. On the GPUs: the sum reads
 * the others' slots through their IPC mappings. */
static void reduce(void *ctx, char *buf, char *const *slots, int me, int L, size_t n, shm_elem t,
                   float scale)
{
    const call_ctx *c = ctx;
    size_t es = t == SHM_F16 ? 2 : 4;
    for (int r = 0; r < L; r++) {
        stage.x[r] = r == me      ? buf
                     : c->on_gpu ? slots[r]
                                 : stage.scratch + (size_t)r * stage.w.piece;
        if (r != me && !c->on_gpu)
            CUDA_CHECK(cudaMemcpyAsync((void *)stage.x[r], slots[r], n * es, cudaMemcpyHostToDevice,
                                       stage.up));
    }
    fusion_cuda_sum_ranks(buf, stage.x, L, n, t == SHM_F16, scale, stage.up);
}

static void reduce_wait(void *ctx)
{
    const call_ctx *c = ctx;
    gpu_wait(stage.up, NULL, c->what);
}

static const node_stage_ops GPU_OPS = {down, down_wait, reduce, reduce_wait};

/* HVDLAB_STAGED_REDUCE ipc or auto: the slots on the GPUs, once, collective. 1 when open on every
 * rank; else each rank that failed says why in one line, and the host's window serves instead. */
static int open_on_gpu(void)
{
    char why[200];
    size_t piece = IPC_PIECE_FACTOR * node_stage_piece_bytes();
    if (ipc_window_open(&stage.ipc, stage.wi.node->comm, piece, why, sizeof why) != 0) {
        if (why[0])
            fprintf(stderr, "hvdlab: warning: staged tensors summed on the GPUs through CUDA IPC "
                    "(HVDLAB_STAGED_REDUCE=%s): rank %d: %s; the host's shared window serves "
                    "instead\n", gpu_ops_node_ipc_min_bytes() == 0 ? "ipc" : "auto",
                    fatal_job_rank(), why);
        return 0;
    }
    node_stage_attach(&stage.wi, stage.ipc.bases, piece);
    return stage.on_gpu = 1;
}

/* The host's window mapped and pinned in every rank, and the scratch its pieces come up to. 0
 * when some rank could not map or pin it (/dev/shm full, a locked-memory limit): every rank then
 * leaves the host's window alike (and this path, unless the GPUs' window is open: it still takes
 * the groups from the IPC size), and each rank that failed says why in one line. Collective. */
static int open_on_host(void)
{
    size_t bytes = 0;
    char *slots = node_stage_window(&stage.w, &bytes); /* NULL on every rank, or on none */
    int ok = slots != NULL, all = ok;
    cudaError_t e = cudaSuccess;
    if (ok && stage.pinned != slots) {
        /* Portable: pinned for every context of this process; each rank pins its own mapping */
        e = cudaHostRegister(slots, bytes, cudaHostRegisterPortable);
        ok = e == cudaSuccess;
        if (!ok)
            (void)cudaGetLastError();
        MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, stage.w.node->comm);
        if (ok && all)
            stage.pinned = slots;
        else if (ok)
            cudaHostUnregister(slots);
    }
    if (!all) {
        char instead[96]; /* who adds instead, for the warning below */
        if (stage.on_gpu)
            snprintf(instead, sizeof instead, "the CPU adds the groups below %g MiB instead (the "
                     "GPUs' window the rest)", (double)gpu_ops_node_ipc_min_bytes() / (1 << 20));
        else
            snprintf(instead, sizeof instead, "the CPU adds them instead");
        if (!slots && stage.w.error[0])
            fprintf(stderr, "hvdlab: warning: staged tensors summed on the GPUs "
                    "(HVDLAB_STAGED_REDUCE): rank %d: %s; %s\n", fatal_job_rank(), stage.w.error,
                    instead);
        else if (slots && !ok)
            fprintf(stderr, "hvdlab: warning: staged tensors summed on the GPUs "
                    "(HVDLAB_STAGED_REDUCE): rank %d: cudaHostRegister of the %zu-byte shared "
                    "window failed (%s); %s\n", fatal_job_rank(), bytes, cudaGetErrorString(e),
                    instead);
        node_stage_free(&stage.w);
        return 0;
    }
    size_t need = (size_t)stage.w.node->size * stage.w.piece;
    if (stage.scratch_bytes < need) {
        if (stage.scratch)
            CUDA_CHECK(cudaFree(stage.scratch));
        stage.scratch = NULL;
        stage.scratch_bytes = 0;
        CUDA_CHECK(cudaMalloc((void **)&stage.scratch, need));
        stage.scratch_bytes = need;
    }
    return 1;
}

/* The windows (on the GPUs when asked for and possible; the host's unless every group goes to
 * the GPUs' window), the table of pieces and the stream: once, collective. 0, on every rank
 * alike, when there can be none. */
static int prepare(MPI_Comm comm)
{
    if (stage.refused)
        return 0;
    if (!stage.ready) {
        node_stage_init(&stage.w, allreduce_host_node(comm));
        node_stage_init(&stage.wi, allreduce_host_node(comm));
        stage.ready = 1;
        if (stage.w.node->size > FUSION_CUDA_MAX_RANKS) { /* the same on every rank */
            if (stage.w.node->rank == 0)
                fprintf(stderr, "hvdlab: warning: staged tensors summed on the GPUs "
                        "(HVDLAB_STAGED_REDUCE): %d ranks on one host, more than the %d the GPU's "
                        "sum takes; the CPU adds them instead\n", stage.w.node->size,
                        FUSION_CUDA_MAX_RANKS);
            stage.refused = 1;
            return 0;
        }
        if (gpu_ops_node_ipc_min_bytes() != SIZE_MAX)
            open_on_gpu(); /* the same answer on every rank */
    }
    /* the host's window: for the groups below the IPC size, or all where IPC is not open */
    const int need_host =
        (!stage.on_gpu || gpu_ops_node_ipc_min_bytes() > 0) && !stage.host_refused;
    if (need_host && !open_on_host()) { /* after the first time: a few checks, nothing made */
        if (!stage.on_gpu) {
            stage.refused = 1;
            return 0;
        }
        stage.host_refused = 1; /* the same on every rank: open_on_host's answer */
    }
    if (!stage.x && !(stage.x = malloc((size_t)stage.w.node->size * sizeof *stage.x)))
        fatal_error("staged allreduce: out of memory for %d ranks", stage.w.node->size);
    if (!stage.up)
        CUDA_CHECK(cudaStreamCreateWithFlags(&stage.up, cudaStreamNonBlocking));
    return 1;
}

/* Whether a group of these bytes on the wire goes through the window on the GPUs: the same on
 * every rank (the same group; the window opened on every rank or on none). */
static int on_gpu(size_t bytes) { return stage.on_gpu && bytes >= gpu_ops_node_ipc_min_bytes(); }

int staged_node_usable(MPI_Comm comm, size_t bytes)
{
    return gpu_ops_node_reduce() && allreduce_host_node(comm) != NULL && prepare(comm) &&
           (!stage.host_refused || on_gpu(bytes));
}

void staged_node_allreduce(void *dev, size_t n, int fp16, float scale, cudaStream_t s,
                           const char *what)
{
    if (n == 0)
        return;
    /* The sums on the up stream write dev only after the first copy down has been waited for,
     * which waits for everything before it on s: no event needed. */
    call_ctx c = {.down = s, .what = what, .on_gpu = on_gpu(n * (fp16 ? 2 : 4))};
    node_stage_allreduce(c.on_gpu ? &stage.wi : &stage.w, dev, n, fp16 ? SHM_F16 : SHM_F32, scale,
                         &GPU_OPS, &c);
}

const char *staged_node_activity(size_t bytes)
{
    return on_gpu(bytes) ? "IPC_GPU_ALLREDUCE" : "STAGED_GPU_ALLREDUCE";
}

void staged_node_free(void)
{
    if (!stage.ready)
        return;
    if (stage.pinned)
        cudaHostUnregister(stage.pinned);
    if (stage.on_gpu) /* every rank is here (hvd_shutdown): the others' reads are over */
        ipc_window_close(&stage.ipc, stage.wi.node->comm);
    node_stage_free(&stage.w);
    node_stage_free(&stage.wi);
    free(stage.x);
    if (stage.scratch)
        cudaFree(stage.scratch);
    if (stage.up)
        cudaStreamDestroy(stage.up);
    memset(&stage, 0, sizeof stage);
}

#endif
