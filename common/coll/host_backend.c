/* host_backend.c — collectives on host tensors. See host_backend.h.
 * Public: host_backend. */
#include "coll/host_backend.h"

#include <stdint.h>
#include <string.h>

#include "base/fatal.h"
#include "base/memory.h"
#include "coll/allreduce.h"
#include "coll/fusion_pack.h"

#define PIECE ((size_t)1 << 30) /* MPI counts are int: large buffers go in pieces of 1 GiB */

/* The host row's buffers, grown to the largest group seen; owned by this file, freed by its
 * shutdown (hvd_shutdown). */
typedef struct {
    float *fused; /* the fusion buffer */
    size_t fused_n;
    uint16_t *half; /* an fp16 group's wire buffer */
    size_t half_n;
} host_fusion_buffers;

static host_fusion_buffers host_buffers;

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

static int takes_any(const fusion_entry *e, size_t len)
{
    (void)e;
    (void)len;
    return 1;
}

static void reduce(MPI_Comm comm, const fusion_entry *e, size_t len, float scale,
                   ring_workspace *ws, fusion_stats *st)
{
    host_fusion_buffers *b = &host_buffers;
    size_t total = 0;
    for (size_t i = 0; i < len; i++)
        total += e[i].n;
    int fp16 = e[0].fp16; /* a group shares op and compression */
    fusion_mark(e, len, "ALLREDUCE", 'B');
    if (!fp16 && fusion_contiguous(e, len)) { /* reduced where it lies: no copy */
        allreduce_run(comm, e[0].buf, total, 0, scale, ws, e, len); /* ring, shm or hier */
    } else {
        void *fused = fp16 ? (void *)(b->half = grow(b->half, &b->half_n, total, sizeof(uint16_t)))
                           : (void *)(b->fused = grow(b->fused, &b->fused_n, total, sizeof(float)));
        fusion_host_buffer hb = {fused, fp16};
        fusion_mark(e, len, "MEMCPY_IN_FUSION_BUFFER", 'B');
        fusion_walk(e, len, &(fusion_mover){.host = fusion_host_pack, .host_ctx = &hb});
        fusion_mark(e, len, "MEMCPY_IN_FUSION_BUFFER", 'E');
        allreduce_run(comm, fused, total, fp16, scale, ws, e, len);
        fusion_mark(e, len, "MEMCPY_OUT_FUSION_BUFFER", 'B');
        fusion_walk(e, len, &(fusion_mover){.host = fusion_host_unpack, .host_ctx = &hb});
        fusion_mark(e, len, "MEMCPY_OUT_FUSION_BUFFER", 'E');
        st->bytes_copied += 2 * total * (fp16 ? sizeof(uint16_t) : sizeof(float));
    }
    fusion_mark(e, len, "ALLREDUCE", 'E');
    st->allreduce_calls++;
    st->tensors += len;
}

static void broadcast(MPI_Comm comm, void *buf, size_t nbytes, int root, const char *what)
{
    (void)what;
    for (size_t off = 0; off < nbytes; off += PIECE) {
        size_t len = nbytes - off < PIECE ? nbytes - off : PIECE;
        MPI_Bcast((char *)buf + off, (int)len, MPI_BYTE, root, comm);
    }
}

static void allgather(MPI_Comm comm, const float *buf, size_t n, float *out, const int *counts,
                      const int *displs, size_t total, const char *what)
{
    (void)total;
    (void)what;
    MPI_Allgatherv(buf, (int)n, MPI_FLOAT, out, counts, displs, MPI_FLOAT, comm);
}

static void shutdown(void)
{
    memory_free(host_buffers.fused);
    memory_free(host_buffers.half);
    memset(&host_buffers, 0, sizeof host_buffers);
}

const coll_backend host_backend = {"host", takes_any, reduce, broadcast, allgather, shutdown};
