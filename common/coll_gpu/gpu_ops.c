/* gpu_ops.c — choose the path of device collectives once per job. See gpu_ops.h.
 * Public: gpu_ops_parse, gpu_ops_request_name, staged_reduce_parse, staged_reduce_name,
 *         gpu_ops_init, gpu_ops_shutdown, gpu_ops_path, gpu_ops_node_reduce,
 *         gpu_ops_node_reduce_min_bytes, gpu_ops_node_ipc_min_bytes, gpu_ops_staged_hugepages,
 *         gpu_ops_ranks_mixed, gpu_ops_is_device, gpu_ops_set_stream, gpu_ops_stream. */
#include "coll_gpu/gpu_ops.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int gpu_ops_parse(const char *v, gpu_ops_request *out)
{
    if (!v || !*v || strcasecmp(v, "auto") == 0)
        *out = GPU_OPS_AUTO;
    else if (strcasecmp(v, "nccl") == 0)
        *out = GPU_OPS_NCCL;
    else if (strcasecmp(v, "mpi") == 0)
        *out = GPU_OPS_MPI;
    else
        return -1;
    return 0;
}

const char *gpu_ops_request_name(gpu_ops_request r)
{
    return r == GPU_OPS_NCCL ? "nccl" : r == GPU_OPS_MPI ? "mpi" : "auto";
}

int staged_reduce_parse(const char *v, staged_reduce *out)
{
    if (!v || !*v || strcmp(v, "auto") == 0)
        *out = STAGED_REDUCE_AUTO;
    else if (strcmp(v, "host") == 0)
        *out = STAGED_REDUCE_HOST;
    else if (strcmp(v, "gpu") == 0)
        *out = STAGED_REDUCE_GPU;
    else if (strcmp(v, "ipc") == 0)
        *out = STAGED_REDUCE_IPC;
    else
        return -1;
    return 0;
}

const char *staged_reduce_name(staged_reduce r)
{
    return r == STAGED_REDUCE_HOST  ? "host"
           : r == STAGED_REDUCE_GPU ? "gpu"
           : r == STAGED_REDUCE_IPC ? "ipc"
                                    : "auto";
}

#ifdef HVDLAB_CUDA

#include "base/cuda_check.h"
#include "base/device_env.h"
#include "coll_gpu/gpu_keep.h"
#include "coll_gpu/gpu_wait.h"
#include "coll_gpu/nccl.h"

/* The GPU collectives' choice for the job and their stream. Owned by this file:
 * gpu_ops_init (from hvd_init) fills it, gpu_ops_shutdown (the GPU rows' shutdown) empties it. */
typedef struct {
    gpu_path path;
    int node_reduce; /* gpu_ops_node_reduce */
    size_t node_ipc_min_bytes; /* gpu_ops_node_ipc_min_bytes */
    size_t node_min_bytes; /* gpu_ops_node_reduce_min_bytes */
    int staged_hugepages; /* gpu_ops_staged_hugepages */
    int ranks_mixed; /* gpu_ops_ranks_mixed */
    int device;
    cudaStream_t own, user;
    cudaEvent_t after; /* on the legacy default stream: what own waits for, no stream bound */
    int user_set;
} gpu_ops_state;
static gpu_ops_state gpu_paths;

/* What each rank tells the others: its GPU (uuid compared, bus id and host for the message). */
typedef struct {
    int has;
    unsigned char uuid[16];
    char bus[32];
    char host[64];
} gpu_id;

static void identify(int local_rank, gpu_id *me, int *device)
{
    memset(me, 0, sizeof *me); /* exchanged as bytes */
    char host[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    MPI_Get_processor_name(host, &len);
    snprintf(me->host, sizeof me->host, "%.63s", host); /* a name cut short still tells */
    if (device_env_forced_cpu())
        return;
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError(); /* no GPU is not an error here */
        return;
    }
    if (n <= 0)
        return;
    *device = local_rank % n;
    struct cudaDeviceProp p;
    CUDA_CHECK(cudaGetDeviceProperties(&p, *device));
    me->has = 1;
    memcpy(me->uuid, p.uuid.bytes, sizeof me->uuid);
    snprintf(me->bus, sizeof me->bus, "%04x:%02x:%02x.0", (unsigned)p.pciDomainID,
             (unsigned)p.pciBusID, (unsigned)p.pciDeviceID);
}

/* Why NCCL cannot run here: two ranks on one GPU, or a rank without one. 0 when it can. */
static int nccl_obstacle(const gpu_id *all, int size, char *why, size_t len)
{
    for (int r = 0; r < size; r++)
        if (!all[r].has) {
            snprintf(why, len, "rank %d has no GPU", r);
            return 1;
        }
    for (int a = 0; a < size; a++)
        for (int b = a + 1; b < size; b++)
            if (memcmp(all[a].uuid, all[b].uuid, sizeof all[a].uuid) == 0) {
                snprintf(why, len, "ranks %d and %d share GPU %s on %s; NCCL refuses two ranks on "
                         "one GPU", a, b, all[a].bus, all[a].host);
                return 1;
            }
    return 0;
}

void gpu_ops_init(const gpu_ops_config *c)
{
    memset(&gpu_paths, 0, sizeof gpu_paths);
    gpu_paths.device = -1;
    gpu_paths.node_ipc_min_bytes = SIZE_MAX; /* no window on the GPUs unless below says so */
    gpu_paths.staged_hugepages = c->staged_hugepages;
    gpu_wait_set_bounds(c->rank, c->warn_s, c->limit_s);
    gpu_id me;
    identify(c->local_rank, &me, &gpu_paths.device);
    gpu_id *all = malloc((size_t)c->size * sizeof *all);
    if (!all)
        fatal_error("GPU collectives: out of memory for %d ranks", c->size);
    MPI_Allgather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, c->comm);
    int with = 0, one_host = 1;
    for (int r = 0; r < c->size; r++) {
        with += all[r].has;
        one_host = one_host && strcmp(all[r].host, all[0].host) == 0;
    }
    if (c->host_group_size > 0 && c->host_group_size < c->size)
        one_host = 0; /* allreduce.h will see several hosts */
    gpu_paths.ranks_mixed = with > 0 && with < c->size;
    if (with == 0) { /* hvd_pin_device says so: nothing to choose */
        free(all);
        return;
    }
    /* Every rank has the same table, so every rank decides alike. */
    char why[400], adds[160] = "";
    int blocked = nccl_obstacle(all, c->size, why, sizeof why);
    free(all);
    if (c->request == GPU_OPS_NCCL && blocked) {
        if (c->rank == 0) {
            fprintf(stderr, "hvdlab: error: HVD_GPU_OPERATIONS=nccl, but %s (run one rank per "
                    "GPU, or HVD_GPU_OPERATIONS=mpi)\n", why);
            fflush(stderr);
        }
        MPI_Barrier(c->comm); /* the line is out before anyone exits */
        MPI_Finalize();
        exit(EXIT_FAILURE);
    }
    if (c->request == GPU_OPS_MPI)
        snprintf(why, sizeof why, "HVD_GPU_OPERATIONS=mpi");
    else if (!blocked)
        snprintf(why, sizeof why, "%s", c->request == GPU_OPS_NCCL ? "HVD_GPU_OPERATIONS=nccl"
                                                          : "every rank has a GPU of its own");
    int nccl = !blocked && c->request != GPU_OPS_MPI;
    if (!nccl && c->staged_reduce != STAGED_REDUCE_HOST) { /* staged_node.h: who adds */
        gpu_paths.node_reduce = with == c->size && one_host && c->size > 1;
        gpu_paths.node_min_bytes =
            c->staged_reduce == STAGED_REDUCE_AUTO ? STAGED_REDUCE_AUTO_MIN_BYTES : 0;
        if (gpu_paths.node_reduce && c->staged_reduce == STAGED_REDUCE_IPC)
            gpu_paths.node_ipc_min_bytes = 0;
        else if (gpu_paths.node_reduce && c->staged_reduce == STAGED_REDUCE_AUTO)
            gpu_paths.node_ipc_min_bytes = STAGED_REDUCE_AUTO_IPC_MIN_BYTES;
        if (c->staged_reduce == STAGED_REDUCE_GPU || c->staged_reduce == STAGED_REDUCE_IPC)
            snprintf(adds, sizeof adds, "; HVDLAB_STAGED_REDUCE=%s: %s",
                     staged_reduce_name(c->staged_reduce),
                     gpu_paths.node_ipc_min_bytes == 0 ? "summed on the GPUs, their window "
                                                         "shared by "
                                                 "CUDA IPC"
                     : gpu_paths.node_reduce  ? "summed on the GPUs"
                     : with < c->size ? "a rank has no GPU, the CPU adds"
                     : !one_host      ? "the ranks span hosts, the CPU adds"
                                      : "one rank, nothing to add");
        else if (gpu_paths.node_reduce) /* auto: said only where it applies */
            snprintf(adds, sizeof adds,
                     "; summed on the GPUs from %zu MiB (through CUDA IPC from %zu MiB), by the "
                     "CPU below", gpu_paths.node_min_bytes >> 20,
                     gpu_paths.node_ipc_min_bytes >> 20);
    }
    if (me.has) {
        CUDA_CHECK(cudaSetDevice(gpu_paths.device));
        CUDA_CHECK(cudaStreamCreateWithFlags(&gpu_paths.own, cudaStreamNonBlocking));
        CUDA_CHECK(cudaEventCreateWithFlags(&gpu_paths.after, cudaEventDisableTiming));
        gpu_paths.path = nccl ? GPU_PATH_NCCL : GPU_PATH_STAGED;
    }
    if (nccl)
        nccl_init(c->comm, c->rank, c->size);
    if (c->rank == 0) {
        char ver[32];
        nccl_version(ver, sizeof ver);
        if (nccl)
            fprintf(stderr, "hvdlab: GPU collectives: NCCL %s (%s)\n", ver, why);
        else
            fprintf(stderr, "hvdlab: GPU collectives: host-staged through MPI (%s%s)\n", why,
                    adds);
        fflush(stderr);
    }
}

void gpu_ops_shutdown(void)
{
    if (gpu_paths.path == GPU_PATH_NCCL)
        nccl_free();
    if (gpu_paths.own)
        cudaStreamDestroy(gpu_paths.own);
    if (gpu_paths.after)
        cudaEventDestroy(gpu_paths.after);
    gpu_keep_release(); /* the buffers the collectives outgrew, and their last ones */
    memset(&gpu_paths, 0, sizeof gpu_paths);
}

gpu_path gpu_ops_path(void) { return gpu_paths.path; }
int gpu_ops_node_reduce(void) { return gpu_paths.node_reduce; }
size_t gpu_ops_node_ipc_min_bytes(void) { return gpu_paths.node_ipc_min_bytes; }
size_t gpu_ops_node_reduce_min_bytes(void) { return gpu_paths.node_min_bytes; }
int gpu_ops_staged_hugepages(void) { return gpu_paths.staged_hugepages; }
int gpu_ops_ranks_mixed(void) { return gpu_paths.ranks_mixed; }

int gpu_ops_is_device(const void *p)
{
    if (gpu_paths.path == GPU_PATH_NONE || !p)
        return 0;
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError(); /* an unknown pointer is host memory */
        return 0;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

void *gpu_ops_set_stream(void *stream)
{
    void *before = gpu_paths.user_set ? (void *)gpu_paths.user : NULL;
    gpu_paths.user = (cudaStream_t)stream;
    gpu_paths.user_set = stream != NULL;
    return before;
}

cudaStream_t gpu_ops_stream(void)
{
    if (gpu_paths.user_set)
        return gpu_paths.user; /* ordered after the work that produced the buffer */
    /* None bound: own, after the work queued so far on the legacy default stream, which itself
     * comes after every blocking stream's (an event: the host waits for nothing here). Not
     * cudaDeviceSynchronize: it waits with no limit for every stream, one stuck with a NCCL
     * kernel whose peer died among them; the collective's gpu_wait on own is bounded. */
    CUDA_CHECK(cudaEventRecord(gpu_paths.after, cudaStreamLegacy));
    CUDA_CHECK(cudaStreamWaitEvent(gpu_paths.own, gpu_paths.after, 0));
    return gpu_paths.own;
}

#else

void gpu_ops_init(const gpu_ops_config *c) { (void)c; }
void gpu_ops_shutdown(void) {}
gpu_path gpu_ops_path(void) { return GPU_PATH_NONE; }
int gpu_ops_node_reduce(void) { return 0; }
size_t gpu_ops_node_ipc_min_bytes(void) { return SIZE_MAX; }
size_t gpu_ops_node_reduce_min_bytes(void) { return 0; }
int gpu_ops_staged_hugepages(void) { return 0; }
int gpu_ops_ranks_mixed(void) { return 0; }
int gpu_ops_is_device(const void *p)
{
    (void)p;
    return 0;
}
void *gpu_ops_set_stream(void *stream)
{
    (void)stream;
    return NULL;
}

#endif
