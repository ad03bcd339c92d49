/* staged.c — device collectives staged through pinned host memory. See staged.h.
 * Public: staged_allreduce, staged_broadcast, staged_download, staged_free. */
#ifdef HVDLAB_CUDA

#include "coll_gpu/staged.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cuda_check.h"
#include "base/fatal.h"
#include "base/memory.h"
#include "coll/allreduce.h"
#include "coll/fusion_pack.h"
#include "coll_gpu/fusion_cuda.h"
#include "coll_gpu/gpu_keep.h"
#include "coll_gpu/gpu_ops.h"
#include "coll_gpu/gpu_wait.h"
#include "prof/timeline.h"

#define PIECE ((size_t)1 << 30) /* MPI counts are int */

/* The host-staged path's buffers. Owned by this file, grown here, handed to gpu_keep by
 * staged_free (the GPU rows' shutdown, through fusion_gpu_free). */
typedef struct {
    char *host; /* pinned: the copies run at full PCIe speed and asynchronously */
    size_t host_bytes;
    int registered; /* host is memory_alloc's, pinned by cudaHostRegister (HVDLAB_STAGED_HOST) */
    void *half; /* device: fp16 casts before the copy down, after the copy up */
    size_t half_bytes;
} staged_state;
static staged_state staging;

/* Grow-only, the outgrown kept until shutdown (gpu_keep.h: freeing here could wait for ever). */
static char *pinned(size_t bytes)
{
    if (staging.host_bytes >= bytes && staging.host)
        return staging.host;
    gpu_keep(staging.host, staging.registered ? GPU_KEEP_REGISTERED : GPU_KEEP_PINNED);
    staging.host = NULL;
    staging.registered = 0;
    bytes = gpu_keep_grown(staging.host_bytes, bytes);
    /* HVDLAB_STAGED_HOST=hugepages: the pinned buffer is memory_alloc's (huge pages) registered
     * with CUDA, so that the one-host allreduce may take its single-copy path (allreduce.c picks
     * it for huge-page buffers from ALLREDUCE_CMA_FROM_*), where cudaMallocHost's 4 KiB pages
     * keep it on the shared window's two copies. Opt-in until a GPU run measures it: make
     * bench-allreduce-gpu runs both. The ranks agreed on it at hvd_init: the path is chosen from
     * the buffer, on each rank alone. */
    if (gpu_ops_staged_hugepages()) {
        /* whole huge pages, registered whole; a failure stops the job: a rank falling back
         * alone would take another path than the others */
        const size_t huge = (size_t)2 << 20, whole = ((bytes ? bytes : 1) + huge - 1) / huge * huge;
        staging.host = memory_alloc(whole);
        if (!staging.host)
            fatal_error("HVDLAB_STAGED_HOST=hugepages: out of host memory for %zu bytes", whole);
        cudaError_t e = cudaHostRegister(staging.host, whole, cudaHostRegisterDefault);
        if (e != cudaSuccess)
            fatal_error("HVDLAB_STAGED_HOST=hugepages: cudaHostRegister of %zu bytes failed: %s "
                        "(unset it to use cudaMallocHost)", whole, cudaGetErrorString(e));
        staging.registered = 1;
    } else {
        CUDA_CHECK(cudaMallocHost((void **)&staging.host, bytes ? bytes : 1));
    }
    staging.host_bytes = bytes;
    return staging.host;
}

static uint16_t *device_half(size_t n)
{
    return gpu_keep_device(&staging.half, &staging.half_bytes, n * sizeof(uint16_t));
}

static size_t run_count(const fusion_entry *e, size_t i, size_t j)
{
    size_t n = 0;
    for (size_t k = i; k < j; k++)
        n += e[k].n;
    return n;
}

/* A group's moves through the pinned buffer (fusion_pack.h's walk): host tensors by the CPU,
 * as the host's fusion buffer takes them; device runs by copy, through a cast for fp16. */
typedef struct {
    fusion_host_buffer h; /* the pinned buffer */
    uint16_t *dh;         /* fp16: the device halves on their way */
    cudaStream_t s;
} staged_moves;

static void run_down(float *t, size_t n, size_t o, void *ctx)
{
    const staged_moves *m = ctx;
    if (m->h.fp16 && n) {
        fusion_cuda_to_half(t, m->dh + o, n, m->s);
        CUDA_CHECK(cudaMemcpyAsync((uint16_t *)m->h.buf + o, m->dh + o, n * sizeof(uint16_t),
                                   cudaMemcpyDeviceToHost, m->s));
    } else if (n) {
        CUDA_CHECK(cudaMemcpyAsync((float *)m->h.buf + o, t, n * sizeof(float),
                                   cudaMemcpyDeviceToHost, m->s));
    }
}

static void run_up(float *t, size_t n, size_t o, void *ctx)
{
    const staged_moves *m = ctx;
    if (m->h.fp16 && n) {
        CUDA_CHECK(cudaMemcpyAsync(m->dh + o, (const uint16_t *)m->h.buf + o,
                                   n * sizeof(uint16_t), cudaMemcpyHostToDevice, m->s));
        fusion_cuda_from_half(m->dh + o, t, n, 1.0f, m->s); /* the ring scaled already */
    } else if (n) {
        CUDA_CHECK(cudaMemcpyAsync(t, (const float *)m->h.buf + o, n * sizeof(float),
                                   cudaMemcpyHostToDevice, m->s));
    }
}

void staged_allreduce(MPI_Comm comm, const fusion_entry *e, size_t len, float scale,
                      ring_workspace *ws, fusion_stats *st)
{
    cudaStream_t s = gpu_ops_stream();
    int fp16 = e[0].fp16;
    size_t total = run_count(e, 0, len), esize = fp16 ? sizeof(uint16_t) : sizeof(float);
    char what[FUSION_NAME_MAX + 64];
    snprintf(what, sizeof what, "allreduce \"%s\"%s (host-staged)", e[0].name,
             len > 1 ? " (fused)" : "");
    char *h = pinned(total * esize);
    uint16_t *dh = fp16 ? device_half(total) : NULL;
    fusion_mark(e, len, "ALLREDUCE", 'B');
    fusion_mark(e, len, "MEMCPY_IN_HOST_BUFFER", 'B');
    staged_moves m = {{h, fp16}, dh, s};
    fusion_walk(e, len, &(fusion_mover){fusion_host_pack, &m.h, run_down, &m});
    gpu_wait(s, NULL, what);
    fusion_mark(e, len, "MEMCPY_IN_HOST_BUFFER", 'E');
    /* the host path's own choice (ring, shared memory or hierarchy) and its timeline mark */
    allreduce_run(comm, h, total, fp16, scale, ws, e, len);
    fusion_mark(e, len, "MEMCPY_OUT_HOST_BUFFER", 'B');
    fusion_walk(e, len, &(fusion_mover){fusion_host_unpack, &m.h, run_up, &m});
    gpu_wait(s, NULL, what);
    fusion_mark(e, len, "MEMCPY_OUT_HOST_BUFFER", 'E');
    fusion_mark(e, len, "ALLREDUCE", 'E');
    st->bytes_copied += 2 * total * esize;
    st->allreduce_calls++;
    st->tensors += len;
}

void staged_broadcast(MPI_Comm comm, void *buf, size_t nbytes, int root, const char *what)
{
    if (nbytes == 0)
        return; /* as the host path: no message */
    int rank;
    MPI_Comm_rank(comm, &rank);
    cudaStream_t s = gpu_ops_stream();
    char *h = pinned(nbytes);
    if (rank == root) {
        CUDA_CHECK(cudaMemcpyAsync(h, buf, nbytes, cudaMemcpyDeviceToHost, s));
        gpu_wait(s, NULL, what);
    }
    for (size_t off = 0; off < nbytes; off += PIECE) {
        size_t len = nbytes - off < PIECE ? nbytes - off : PIECE;
        MPI_Bcast(h + off, (int)len, MPI_BYTE, root, comm);
    }
    if (rank != root) {
        CUDA_CHECK(cudaMemcpyAsync(buf, h, nbytes, cudaMemcpyHostToDevice, s));
        gpu_wait(s, NULL, what);
    }
}

const void *staged_download(const void *dev, size_t nbytes, const char *what)
{
    cudaStream_t s = gpu_ops_stream();
    char *h = pinned(nbytes);
    if (nbytes) {
        CUDA_CHECK(cudaMemcpyAsync(h, dev, nbytes, cudaMemcpyDeviceToHost, s));
        gpu_wait(s, NULL, what);
    }
    return h;
}

void staged_free(void)
{
    gpu_keep(staging.host, staging.registered ? GPU_KEEP_REGISTERED : GPU_KEEP_PINNED);
    gpu_keep(staging.half, GPU_KEEP_DEVICE);
    memset(&staging, 0, sizeof staging); /* freed by gpu_ops_shutdown, next */
}

#endif
