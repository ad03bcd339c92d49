/* gpu_backend.c — the GPU's rows of the table of ways. See gpu_backend.h.
 * Public: gpu_backend_rows. */
#include "coll_gpu/gpu_backend.h"

#ifdef HVDLAB_CUDA

#include <stdlib.h>

#include "base/fatal.h"
#include "coll/allreduce.h"
#include "coll_gpu/fusion_gpu.h"
#include "coll_gpu/gpu_ops.h"
#include "coll_gpu/nccl.h"
#include "coll_gpu/staged.h"
#include "coll_gpu/staged_node.h"

static int any_of(const fusion_entry *e, size_t len, int way)
{
    for (size_t i = 0; i < len; i++)
        if (e[i].gpu == way)
            return 1;
    return 0;
}
static int nccl_enabled(const fusion_entry *e, size_t len) { return any_of(e, len, FUSION_NCCL); }
static int staged_enabled(const fusion_entry *e, size_t len)
{
    return any_of(e, len, FUSION_STAGED);
}

static void nccl_bcast(MPI_Comm comm, void *buf, size_t nbytes, int root, const char *what)
{
    (void)comm;
    nccl_broadcast(buf, nbytes, root, gpu_ops_stream(), what);
}

/* Counts differ between ranks, and so may the tensors' places: a host tensor is uploaded. */
static void nccl_gather(MPI_Comm comm, const float *buf, size_t n, float *out, const int *counts,
                        const int *displs, size_t total, const char *what)
{
    (void)n;
    int size;
    MPI_Comm_size(comm, &size);
    size_t *c = malloc((size_t)size * sizeof *c), *o = malloc((size_t)size * sizeof *o);
    if (!c || !o)
        fatal_error("%s: out of memory", what);
    for (int r = 0; r < size; r++) {
        c[r] = (size_t)counts[r];
        o[r] = (size_t)displs[r];
    }
    nccl_allgather_to_host(buf, !gpu_ops_is_device(buf), out, c, o, total, gpu_ops_stream(),
                           what);
    free(c);
    free(o);
}

/* MPI gets a host copy of the device tensor. */
static void staged_gather(MPI_Comm comm, const float *buf, size_t n, float *out,
                          const int *counts, const int *displs, size_t total, const char *what)
{
    (void)total;
    buf = staged_download(buf, n * sizeof *buf, what);
    MPI_Allgatherv(buf, (int)n, MPI_FLOAT, out, counts, displs, MPI_FLOAT, comm);
}

/* The device fusion buffer and the staging buffers, then NCCL, the streams and what the
 * collectives outgrew (gpu_ops_shutdown). One row frees what both share. */
static void gpu_shutdown(void)
{
    fusion_gpu_free();
    gpu_ops_shutdown();
}

static const coll_backend nccl_row = {"nccl", nccl_enabled, fusion_gpu_reduce, nccl_bcast,
                                      nccl_gather, gpu_shutdown};
static const coll_backend staged_row = {"staged", staged_enabled, fusion_gpu_reduce,
                                        staged_broadcast, staged_gather, NULL};

size_t gpu_backend_rows(const coll_backend **rows)
{
    allreduce_set_window_user(staged_node_free);
    rows[0] = &nccl_row;
    rows[1] = &staged_row;
    return 2;
}

#else

size_t gpu_backend_rows(const coll_backend **rows)
{
    (void)rows;
    return 0;
}

#endif
