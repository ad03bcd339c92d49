/* fusion_gpu.c — reduce a fusion group of device tensors. See fusion_gpu.h.
 * Public: fusion_gpu_reduce, fusion_gpu_free.
 * A group's NCCL runs go to NCCL; its other runs (device tensors staged through the host, and
 * host tensors among them) to the GPU-summed staged path where staged_node_usable and the run
 * is large enough (gpu_ops_node_reduce_min_bytes), else to staged.c (the host's allreduce). */
#ifdef HVDLAB_CUDA

#include "coll_gpu/fusion_gpu.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/cuda_check.h"
#include "base/fatal.h"
#include "base/half.h"
#include "coll/fusion_pack.h"
#include "coll_gpu/fusion_cuda.h"
#include "coll_gpu/gpu_keep.h"
#include "coll_gpu/gpu_ops.h"
#include "coll_gpu/gpu_wait.h"
#include "coll_gpu/nccl.h"
#include "coll_gpu/staged.h"
#include "coll_gpu/staged_node.h"
#include "prof/timeline.h"

/* The device fusion buffer and the host halves of host tensors in device groups. Owned by
 * this file, grown here, let go by fusion_gpu_free (the GPU rows' shutdown). */
typedef struct {
    void *buf; /* device fusion buffer */
    size_t bytes;
    uint16_t *half; /* host: a host tensor's halves on their way up or down (staged groups) */
    size_t half_n;
} fusion_gpu_state;
static fusion_gpu_state device_fusion;

/* The host half buffer for n values; with src, src's values cast into it (base/half.h). */
static uint16_t *host_half(const float *src, size_t n)
{
    if (device_fusion.half_n < n) {
        free(device_fusion.half);
        device_fusion.half = malloc(n * sizeof *device_fusion.half);
        if (!device_fusion.half)
            fatal_error("GPU collectives: out of host memory for %zu halves", n);
        device_fusion.half_n = n;
    }
    for (size_t k = 0; src && k < n; k++)
        device_fusion.half[k] = half_from_float(src[k]);
    return device_fusion.half;
}

/* Grows; outgrown ones are freed at shutdown (gpu_keep.h: a cudaFree here waits for ever
 * behind work stuck on any stream). */
static void *device_buffer(size_t bytes)
{
    return gpu_keep_device(&device_fusion.buf, &device_fusion.bytes, bytes);
}

/* A group's moves through the device fusion buffer (fusion_pack.h's walk). */
typedef struct {
    char *d; /* the device fusion buffer */
    int fp16;
    float scale; /* unpack: the fp16 average's scale, applied in float by the kernel */
    cudaStream_t s;
    const char *what;
} device_moves;

/* Packing. Host tensors (only in a staged group: a NCCL run holds device tensors alone) are
 * copied up, cast by the CPU first for fp16 (the same helpers, the same bits). A copy from
 * pageable memory "might be synchronous" (CUDA's API sync behavior), no more:
 * device_fusion.half, which the next host tensor refills (or host_half frees), is waited for
 * before it is touched again. */
static void host_up(float *t, size_t n, size_t o, void *ctx)
{
    const device_moves *m = ctx;
    const void *src = t; /* the caller's: untouched until the call returns */
    if (m->fp16)
        src = host_half(t, n);
    if (n)
        CUDA_CHECK(cudaMemcpyAsync(m->d + o * (m->fp16 ? 2 : 4), src, n * (m->fp16 ? 2 : 4),
                                   cudaMemcpyHostToDevice, m->s));
    if (n && m->fp16)
        nccl_wait(m->s, m->what);
}

static void run_in(float *t, size_t n, size_t o, void *ctx)
{
    const device_moves *m = ctx;
    if (m->fp16)
        fusion_cuda_to_half(t, (uint16_t *)m->d + o, n, m->s);
    else if (n)
        CUDA_CHECK(cudaMemcpyAsync((float *)m->d + o, t, n * sizeof(float),
                                   cudaMemcpyDeviceToDevice, m->s));
}

/* Unpacking. Host tensors come down into pageable memory; CUDA documents such a copy as one that
 * "might be synchronous", so the halves are waited for before the CPU reads them. The caller
 * waits for the rest. */
static void host_down(float *t, size_t n, size_t o, void *ctx)
{
    const device_moves *m = ctx;
    if (n && m->fp16) {
        uint16_t *h = host_half(NULL, n);
        CUDA_CHECK(cudaMemcpyAsync(h, (const uint16_t *)m->d + o, n * 2, cudaMemcpyDeviceToHost,
                                   m->s));
        nccl_wait(m->s, m->what);
        for (size_t k = 0; k < n; k++)
            t[k] = half_to_float(h[k]); /* the sum was scaled in half already */
    } else if (n) {
        CUDA_CHECK(cudaMemcpyAsync(t, (const float *)m->d + o, n * sizeof(float),
                                   cudaMemcpyDeviceToHost, m->s));
    }
}

static void run_out(float *t, size_t n, size_t o, void *ctx)
{
    const device_moves *m = ctx;
    if (m->fp16)
        fusion_cuda_from_half((const uint16_t *)m->d + o, t, n, m->scale, m->s);
    else if (n)
        CUDA_CHECK(cudaMemcpyAsync(t, (const float *)m->d + o, n * sizeof(float),
                                   cudaMemcpyDeviceToDevice, m->s));
}

static void pack(const fusion_entry *e, size_t len, char *d, int fp16, cudaStream_t s,
                 const char *what)
{
    device_moves m = {d, fp16, 1.0f, s, what};
    fusion_walk(e, len, &(fusion_mover){host_up, &m, run_in, &m});
}

static void unpack(const fusion_entry *e, size_t len, const char *d, int fp16, float scale,
                   cudaStream_t s, const char *what)
{
    device_moves m = {(char *)d, fp16, scale, s, what};
    fusion_walk(e, len, &(fusion_mover){host_down, &m, run_out, &m});
}

/* With the timeline on, each stage is waited for, so its span covers the GPU's time. */
static void stage_done(cudaStream_t s, const char *what)
{
    if (timeline_enabled())
        nccl_wait(s, what);
}

static void nccl_run(const fusion_entry *e, size_t len, float scale, fusion_stats *st)
{
    cudaStream_t s = gpu_ops_stream();
    int fp16 = e[0].fp16, avg = e[0].op == HVD_AVERAGE;
    size_t total = 0;
    for (size_t i = 0; i < len; i++)
        total += e[i].n;
    char what[FUSION_NAME_MAX + 64];
    snprintf(what, sizeof what, "allreduce \"%s\"%s", e[0].name, len > 1 ? " (fused)" : "");
    fusion_mark(e, len, "ALLREDUCE", 'B');
    if (!fp16 && fusion_contiguous(e, len)) { /* the flat gradient buffer: in place, no copy */
        fusion_mark(e, len, "NCCL_ALLREDUCE", 'B');
        nccl_allreduce(e[0].buf, total, 0, avg, s, what);
        fusion_mark(e, len, "NCCL_ALLREDUCE", 'E');
    } else {
        size_t esize = fp16 ? sizeof(uint16_t) : sizeof(float);
        char *d = device_buffer(total * esize);
        fusion_mark(e, len, "MEMCPY_IN_FUSION_BUFFER", 'B');
        pack(e, len, d, fp16, s, what);
        stage_done(s, what);
        fusion_mark(e, len, "MEMCPY_IN_FUSION_BUFFER", 'E');
        fusion_mark(e, len, "NCCL_ALLREDUCE", 'B');
        /* fp16: summed in NCCL, averaged in float by the unpack kernel, as the CPU ring does */
        nccl_allreduce_queue(d, total, fp16, fp16 ? 0 : avg, s, what);
        stage_done(s, what);
        fusion_mark(e, len, "NCCL_ALLREDUCE", 'E');
        fusion_mark(e, len, "MEMCPY_OUT_FUSION_BUFFER", 'B');
        unpack(e, len, d, fp16, fp16 && avg ? scale : 1.0f, s, what);
        nccl_wait(s, what);
        fusion_mark(e, len, "MEMCPY_OUT_FUSION_BUFFER", 'E');
        st->bytes_copied += 2 * total * esize;
    }
    fusion_mark(e, len, "ALLREDUCE", 'E');
    st->allreduce_calls++;
    st->tensors += len;
}

/* A staged run summed on the GPUs (staged_node.h): the group in place when it is the flat fp32
 * gradient buffer on the device, else through the device fusion buffer. scale goes to the sum
 * (the ring's arithmetic), never to the unpack. */
static void node_run(const fusion_entry *e, size_t len, float scale, fusion_stats *st)
{
    cudaStream_t s = gpu_ops_stream();
    int fp16 = e[0].fp16, in_place = !fp16 && fusion_contiguous(e, len);
    size_t total = 0;
    for (size_t i = 0; i < len; i++) {
        total += e[i].n;
        in_place = in_place && e[i].gpu;
    }
    char what[FUSION_NAME_MAX + 64];
    snprintf(what, sizeof what, "allreduce \"%s\"%s (host-staged)", e[0].name,
             len > 1 ? " (fused)" : "");
    size_t esize = fp16 ? sizeof(uint16_t) : sizeof(float);
    char *d = in_place ? (char *)e[0].buf : device_buffer(total * esize);
    fusion_mark(e, len, "ALLREDUCE", 'B');
    if (!in_place) {
        fusion_mark(e, len, "MEMCPY_IN_FUSION_BUFFER", 'B');
        pack(e, len, d, fp16, s, what);
        stage_done(s, what);
        fusion_mark(e, len, "MEMCPY_IN_FUSION_BUFFER", 'E');
    }
    /* one span: the copies down, the host's barriers and the copies up and sums overlap */
    fusion_mark(e, len, staged_node_activity(total * esize), 'B');
    staged_node_allreduce(d, total, fp16, scale, s, what);
    fusion_mark(e, len, staged_node_activity(total * esize), 'E');
    if (!in_place) {
        fusion_mark(e, len, "MEMCPY_OUT_FUSION_BUFFER", 'B');
        unpack(e, len, d, fp16, 1.0f, s, what);
        gpu_wait(s, NULL, what);
        fusion_mark(e, len, "MEMCPY_OUT_FUSION_BUFFER", 'E');
        st->bytes_copied += 2 * total * esize;
    }
    fusion_mark(e, len, "ALLREDUCE", 'E');
    st->allreduce_calls++;
    st->tensors += len;
}

/* A run's bytes on the wire (a group shares fp16): what HVDLAB_STAGED_REDUCE=auto goes by. */
static size_t wire_bytes(const fusion_entry *e, size_t len)
{
    size_t total = 0;
    for (size_t i = 0; i < len; i++)
        total += e[i].n;
    return total * (e[0].fp16 ? sizeof(uint16_t) : sizeof(float));
}

void fusion_gpu_reduce(MPI_Comm comm, const fusion_entry *e, size_t len, float scale,
                       ring_workspace *ws, fusion_stats *st)
{
    for (size_t i = 0; i < len;) {
        int nccl = e[i].gpu == FUSION_NCCL;
        size_t j = i + 1;
        while (j < len && (e[j].gpu == FUSION_NCCL) == nccl)
            j++;
        const size_t bytes = nccl ? 0 : wire_bytes(e + i, j - i);
        if (nccl)
            nccl_run(e + i, j - i, scale, st);
        else if (bytes >= gpu_ops_node_reduce_min_bytes() && staged_node_usable(comm, bytes))
            node_run(e + i, j - i, scale, st);
        else
            staged_allreduce(comm, e + i, j - i, scale, ws, st);
        i = j;
    }
}

void fusion_gpu_free(void)
{
    gpu_keep(device_fusion.buf, GPU_KEEP_DEVICE); /* freed by gpu_ops_shutdown, next */
    free(device_fusion.half);
    device_fusion.buf = NULL;
    device_fusion.bytes = 0;
    device_fusion.half = NULL;
    device_fusion.half_n = 0;
    staged_free(); /* staged_node's window goes with the host's topology (allreduce_free) */
}

#endif
