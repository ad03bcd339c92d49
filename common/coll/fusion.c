/* fusion.c — tensor fusion: the queue, its groups, each handed to the first way of the table
 * that takes it (backend.h). See fusion.h.
 * Public: fusion_enqueue, fusion_flush, fusion_free. */
#include "coll/fusion.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fatal.h"
#include "coll/backend.h"
#include "prof/timeline.h"

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

static void reduce_group(fusion_queue *q, MPI_Comm comm, const fusion_entry *e, size_t len)
{
    int size;
    MPI_Comm_size(comm, &size);
    float scale = e[0].op == HVD_AVERAGE ? 1.0f / (float)size : 1.0f;
    const coll_backend *way = backend_for(q->backends, q->nbackends, e, len);
    way->reduce(comm, e, len, scale, &q->ws, &q->stats);
}

void fusion_flush(fusion_queue *q, MPI_Comm comm, size_t threshold,
                  void (*enter)(const fusion_entry *e, size_t queued))
{
    if (enter) {
        /* Queue lengths first (a single queued tensor is described as itself, which reads
         * better in the error), so that every rank then makes the same number of calls. */
        if (q->len != 1)
            enter(NULL, q->len);
        for (size_t i = 0; i < q->len; i++)
            enter(&q->entries[i], 0);
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
    free(q->entries);
    ring_workspace_free(&q->ws);
    memset(q, 0, sizeof *q);
}
