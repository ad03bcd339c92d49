/* staged_node.c — node_stage.h's ops on the GPU. See staged_node.h.
 * Public: staged_node_usable, staged_node_allreduce, staged_node_free. */
#ifdef HVDLAB_CUDA

#include "coll/staged_node.h"

#include <stdio.h>
#include <string.h>

#include "base/cuda_check.h"
#include "coll/allreduce.h"
#include "coll/fusion_cuda.h"
#include "coll/gpu_ops.h"
#include "coll/gpu_wait.h"
#include "coll/hvd.h"
#include "coll/node_stage.h"

static struct {
    int ready;        /* w initialised on the host's node */
    int refused;      /* a rank could not pin the window: the CPU adds, for the job's life */
    node_stage w;
    char *pinned;     /* the window's slots as registered with CUDA (NULL: not yet) */
    char *scratch;    /* device: one piece per rank, the others' pieces come up here */
    size_t scratch_bytes;
    cudaStream_t up;  /* the others' pieces up and the sums; the copies down go on the ops stream */
} N;

/* One call's ops context: where its copies down go, and its name for errors. */
typedef struct {
    cudaStream_t down;
    const char *what;
} call_ctx;

static void down(void *ctx, const char *buf, char *slot, size_t bytes)
{
    const call_ctx *c = ctx;
    CUDA_CHECK(cudaMemcpyAsync(slot, buf, bytes, cudaMemcpyDeviceToHost, c->down));
}

static void down_wait(void *ctx)
{
    const call_ctx *c = ctx;
    gpu_wait(c->down, NULL, c->what);
}

static void reduce(void *ctx, char *buf, char *const *slots, int me, int L, size_t n, shm_elem t,
                   float scale)
{
    (void)ctx;
    size_t es = t == SHM_F16 ? 2 : 4, stride = N.w.piece / es;
    for (int r = 0; r < L; r++)
        if (r != me)
            CUDA_CHECK(cudaMemcpyAsync(N.scratch + (size_t)r * N.w.piece, slots[r], n * es,
                                       cudaMemcpyHostToDevice, N.up));
    fusion_cuda_sum_ranks(buf, N.scratch, stride, me, L, n, t == SHM_F16, scale, N.up);
}

static void reduce_wait(void *ctx)
{
    const call_ctx *c = ctx;
    gpu_wait(N.up, NULL, c->what);
}

static const node_stage_ops GPU_OPS = {down, down_wait, reduce, reduce_wait};

/* The window mapped and pinned in every rank, the scratch and the stream: once, collective. 0
 * when some rank could not map or pin it (/dev/shm full, a locked-memory limit): every rank then
 * leaves this path alike, and each rank that failed says why in one line. */
static int prepare(MPI_Comm comm)
{
    if (N.refused)
        return 0;
    if (!N.ready) {
        node_stage_init(&N.w, allreduce_host_node(comm));
        N.ready = 1;
    }
    size_t bytes = 0;
    char *slots = node_stage_window(&N.w, &bytes); /* NULL on every rank, or on none */
    int ok = slots != NULL, all = ok;
    cudaError_t e = cudaSuccess;
    if (ok && N.pinned != slots) {
        /* Portable: pinned for every context of this process; each rank pins its own mapping */
        e = cudaHostRegister(slots, bytes, cudaHostRegisterPortable);
        ok = e == cudaSuccess;
        if (!ok)
            (void)cudaGetLastError();
        MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, N.w.node->comm);
        if (ok && all)
            N.pinned = slots;
        else if (ok)
            cudaHostUnregister(slots);
    }
    if (!all) {
        if (!slots && N.w.error[0])
            fprintf(stderr, "hvdlab: warning: staged tensors summed on the GPUs "
                    "(HVDLAB_STAGED_REDUCE): rank %d: %s; the CPU adds them instead\n",
                    hvd_rank(), N.w.error);
        else if (slots && !ok)
            fprintf(stderr, "hvdlab: warning: staged tensors summed on the GPUs "
                    "(HVDLAB_STAGED_REDUCE): rank %d: cudaHostRegister of the %zu-byte shared "
                    "window failed (%s); the CPU adds them instead\n", hvd_rank(), bytes,
                    cudaGetErrorString(e));
        node_stage_free(&N.w);
        N.refused = 1;
        return 0;
    }
    size_t need = (size_t)N.w.node->size * N.w.piece;
    if (N.scratch_bytes < need) {
        if (N.scratch)
            CUDA_CHECK(cudaFree(N.scratch));
        N.scratch = NULL;
        N.scratch_bytes = 0;
        CUDA_CHECK(cudaMalloc((void **)&N.scratch, need));
        N.scratch_bytes = need;
    }
    if (!N.up)
        CUDA_CHECK(cudaStreamCreateWithFlags(&N.up, cudaStreamNonBlocking));
    return 1;
}

int staged_node_usable(MPI_Comm comm)
{
    return gpu_ops_node_reduce() && allreduce_host_node(comm) != NULL && prepare(comm);
}

void staged_node_allreduce(void *dev, size_t n, int fp16, float scale, cudaStream_t s,
                           const char *what)
{
    if (n == 0)
        return;
    /* The sums on the up stream write dev only after the first copy down has been waited for,
     * which waits for everything before it on s: no event needed. */
    call_ctx c = {.down = s, .what = what};
    node_stage_allreduce(&N.w, dev, n, fp16 ? SHM_F16 : SHM_F32, scale, &GPU_OPS, &c);
}

void staged_node_free(void)
{
    if (!N.ready)
        return;
    if (N.pinned)
        cudaHostUnregister(N.pinned);
    node_stage_free(&N.w);
    if (N.scratch)
        cudaFree(N.scratch);
    if (N.up)
        cudaStreamDestroy(N.up);
    memset(&N, 0, sizeof N);
}

#endif
