/* fusion.c — tensor fusion over the allreduce (allreduce.h: ring, shm, hierarchical).
 * See fusion.h.
 * Public: fusion_enqueue, fusion_flush, fusion_free. */
#include "coll/fusion.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fatal.h"
#include "base/half.h"
#include "base/memory.h"
#include "coll/allreduce.h"
#include "coll_gpu/gpu_ops.h"
#include "prof/timeline.h"
#ifdef HVDLAB_CUDA
#include "coll_gpu/fusion_gpu.h"
#endif

void fusion_enqueue(fusion_queue *q, float *buf, size_t n, hvd_op op, int fp16, int gpu,
                    const char *name)
{
    if (q->len == q->cap) {
        size_t cap = q->cap ? 2 * q->cap : 64;
        fusion_entry *e = realloc(q->entries, cap * sizeof *e);
        if (!e)
            fatal_error("tensor fusion: out of memory queueing \"%s\"", name ? name : "");
        q->entries = e;
        q->cap = cap;
    }
    fusion_entry *e = &q->entries[q->len++];
    e->buf = buf;
    e->n = n;
    e->op = op;
    e->fp16 = fp16;
    e->gpu = gpu;
    snprintf(e->name, sizeof e->name, "%s", name && *name ? name : "unnamed");
    timeline_event(e->name, "NEGOTIATE_ALLREDUCE", 'B');
}

static void *grow(void *p, size_t *have, size_t need, size_t esize)
{
    if (*have >= need)
        return p;
    memory_free(p);
    p = memory_alloc(need * esize); /* pre-faulted once, not on every use */
    if (!p)
        fatal_error("tensor fusion: cannot allocate a %zu-byte fusion buffer", need * esize);
    *have = need;
    return p;
}

/* Copies the group's tensors into the fusion buffer back to back, as float or as half. */
static void pack(const fusion_entry *e, size_t len, void *dst)
{
    for (size_t i = 0, o = 0; i < len; o += e[i].n, i++) {
        if (e[i].fp16)
            for (size_t j = 0; j < e[i].n; j++)
                ((uint16_t *)dst)[o + j] = half_from_float(e[i].buf[j]);
        else
            memcpy((float *)dst + o, e[i].buf, e[i].n * sizeof(float));
    }
}

static void unpack(const fusion_entry *e, size_t len, const void *src)
{
    for (size_t i = 0, o = 0; i < len; o += e[i].n, i++) {
        if (e[i].fp16)
            for (size_t j = 0; j < e[i].n; j++)
                e[i].buf[j] = half_to_float(((const uint16_t *)src)[o + j]);
        else
            memcpy(e[i].buf, (const float *)src + o, e[i].n * sizeof(float));
    }
}

static void reduce_group(fusion_queue *q, MPI_Comm comm, const fusion_entry *e, size_t len)
{
    int size;
    MPI_Comm_size(comm, &size);
    float scale = e[0].op == HVD_AVERAGE ? 1.0f / (float)size : 1.0f;
    size_t total = 0;
    for (size_t i = 0; i < len; i++)
        total += e[i].n;
    int fp16 = e[0].fp16; /* a group shares op and compression */
#ifdef HVDLAB_CUDA
    for (size_t i = 0; i < len; i++)
        if (e[i].gpu) { /* device tensors: NCCL or staged through the host */
            fusion_gpu_reduce(comm, e, len, scale, &q->ws, &q->stats);
            return;
        }
#endif
    fusion_mark(e, len, "ALLREDUCE", 'B');
    if (!fp16 && fusion_contiguous(e, len)) { /* reduced where it lies: no copy */
        allreduce_run(comm, e[0].buf, total, 0, scale, &q->ws, e, len); /* ring, shm or hier */
    } else {
        void *fused = fp16 ? (void *)(q->hbuf = grow(q->hbuf, &q->hbuf_n, total, sizeof(uint16_t)))
                           : (void *)(q->fbuf = grow(q->fbuf, &q->fbuf_n, total, sizeof(float)));
        fusion_mark(e, len, "MEMCPY_IN_FUSION_BUFFER", 'B');
        pack(e, len, fused);
        fusion_mark(e, len, "MEMCPY_IN_FUSION_BUFFER", 'E');
        allreduce_run(comm, fused, total, fp16, scale, &q->ws, e, len);
        fusion_mark(e, len, "MEMCPY_OUT_FUSION_BUFFER", 'B');
        unpack(e, len, fused);
        fusion_mark(e, len, "MEMCPY_OUT_FUSION_BUFFER", 'E');
        q->stats.bytes_copied += 2 * total * (fp16 ? sizeof(uint16_t) : sizeof(float));
    }
    fusion_mark(e, len, "ALLREDUCE", 'E');
    q->stats.allreduce_calls++;
    q->stats.tensors += len;
}

void fusion_flush(fusion_queue *q, MPI_Comm comm, size_t threshold,
                  void (*enter)(const coll_desc *d))
{
    if (enter) {
        /* Queue lengths first (a single queued tensor is described as itself, which reads
         * better in the error), so that every rank then makes the same number of calls. */
        if (q->len != 1) {
            coll_desc d = coll_describe(COLL_SYNCHRONIZE, "", q->len, -1);
            enter(&d);
        }
        for (size_t i = 0; i < q->len; i++) {
            const fusion_entry *e = &q->entries[i];
            coll_desc d = coll_describe_allreduce(e->name, e->n, e->op, e->fp16);
            d.gpu = e->gpu == FUSION_NCCL ? COLL_GPU_NCCL
                    : e->gpu == FUSION_STAGED && gpu_ops_node_reduce() ? COLL_GPU_SUMMED
                                                                       : 0;
            enter(&d);
        }
    }
    fusion_mark(q->entries, q->len, "NEGOTIATE_ALLREDUCE", 'E');
    for (size_t i = 0; i < q->len;) {
        size_t len = fusion_group_len(q->entries + i, q->len - i, threshold);
        reduce_group(q, comm, q->entries + i, len);
        i += len;
    }
    q->len = 0;
}

void fusion_free(fusion_queue *q)
{
#ifdef HVDLAB_CUDA
    fusion_gpu_free();
#endif
    free(q->entries);
    memory_free(q->fbuf);
    memory_free(q->hbuf);
    ring_workspace_free(&q->ws);
    memset(q, 0, sizeof *q);
}
