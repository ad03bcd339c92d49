/* fusion_gpu.c — reduce a fusion group of device tensors. See fusion_gpu.h.
 * Public: fusion_gpu_reduce, fusion_gpu_free. */
#ifdef HVDLAB_CUDA

#include "coll/fusion_gpu.h"

#include <stdio.h>

#include "base/cuda_check.h"
#include "coll/fusion_cuda.h"
#include "coll/gpu_ops.h"
#include "coll/nccl.h"
#include "coll/staged.h"
#include "coll/timeline.h"

static struct {
    void *buf; /* device fusion buffer */
    size_t bytes;
} D;

static void *device_buffer(size_t bytes)
{
    if (D.bytes >= bytes)
        return D.buf;
    if (D.buf)
        CUDA_CHECK(cudaFree(D.buf));
    D.buf = NULL;
    D.bytes = 0;
    CUDA_CHECK(cudaMalloc(&D.buf, bytes));
    D.bytes = bytes;
    return D.buf;
}

/* Device tensors into the fusion buffer, back to back (float, or cast to half). */
static void pack(const fusion_entry *e, size_t len, char *d, int fp16, cudaStream_t s)
{
    for (size_t i = 0, o = 0; i < len;) {
        size_t j = i + fusion_device_run(e + i, len - i), n = 0;
        for (size_t k = i; k < j; k++)
            n += e[k].n;
        if (fp16)
            fusion_cuda_to_half(e[i].buf, (uint16_t *)d + o, n, s);
        else if (n)
            CUDA_CHECK(cudaMemcpyAsync((float *)d + o, e[i].buf, n * sizeof(float),
                                       cudaMemcpyDeviceToDevice, s));
        o += n;
        i = j;
    }
}

static void unpack(const fusion_entry *e, size_t len, const char *d, int fp16, float scale,
                   cudaStream_t s)
{
    for (size_t i = 0, o = 0; i < len;) {
        size_t j = i + fusion_device_run(e + i, len - i), n = 0;
        for (size_t k = i; k < j; k++)
            n += e[k].n;
        if (fp16)
            fusion_cuda_from_half((const uint16_t *)d + o, e[i].buf, n, scale, s);
        else if (n)
            CUDA_CHECK(cudaMemcpyAsync(e[i].buf, (const float *)d + o, n * sizeof(float),
                                       cudaMemcpyDeviceToDevice, s));
        o += n;
        i = j;
    }
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
    char what[COLL_NAME_MAX + 64];
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
        pack(e, len, d, fp16, s);
        stage_done(s, what);
        fusion_mark(e, len, "MEMCPY_IN_FUSION_BUFFER", 'E');
        fusion_mark(e, len, "NCCL_ALLREDUCE", 'B');
        /* fp16: summed in NCCL, averaged in float by the unpack kernel, as the CPU ring does */
        nccl_allreduce_queue(d, total, fp16, fp16 ? 0 : avg, s, what);
        stage_done(s, what);
        fusion_mark(e, len, "NCCL_ALLREDUCE", 'E');
        fusion_mark(e, len, "MEMCPY_OUT_FUSION_BUFFER", 'B');
        unpack(e, len, d, fp16, fp16 && avg ? scale : 1.0f, s);
        nccl_wait(s, what);
        fusion_mark(e, len, "MEMCPY_OUT_FUSION_BUFFER", 'E');
        st->bytes_copied += 2 * total * esize;
    }
    fusion_mark(e, len, "ALLREDUCE", 'E');
    st->ring_calls++;
    st->tensors += len;
}

void fusion_gpu_reduce(MPI_Comm comm, const fusion_entry *e, size_t len, float scale,
                       ring_workspace *ws, fusion_stats *st)
{
    for (size_t i = 0; i < len;) {
        int nccl = e[i].gpu == FUSION_NCCL;
        size_t j = i + 1;
        while (j < len && (e[j].gpu == FUSION_NCCL) == nccl)
            j++;
        if (nccl)
            nccl_run(e + i, j - i, scale, st);
        else
            staged_allreduce(comm, e + i, j - i, scale, ws, st);
        i = j;
    }
}

void fusion_gpu_free(void)
{
    if (D.buf)
        cudaFree(D.buf);
    D.buf = NULL;
    D.bytes = 0;
    staged_free();
}

#endif
