/* node_stage.c — one host's ranks reduce through pinned slots, piece by piece. See node_stage.h.
 * Public: node_stage_init, node_stage_window, node_stage_allreduce, node_stage_free,
 *         node_stage_set_piece_bytes. */
#include "coll/node_stage.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/fatal.h"

/* 4 MiB slots: a copy of 4 MiB takes ~75 us at the 55 GB/s an H200 copies each way, well above
 * a wait on the GPU and a barrier (~10 us together), and 64 MiB then runs as 16 pieces, of which
 * only the first copy down and the last sum are not overlapped with another piece's copy. */
#define DEFAULT_PIECE ((size_t)4 << 20)
#define PAGE ((size_t)4096)

static size_t piece_bytes = DEFAULT_PIECE;

void node_stage_set_piece_bytes(size_t bytes) { piece_bytes = bytes ? bytes : DEFAULT_PIECE; }

void node_stage_init(node_stage *w, shm_node *node)
{
    memset(w, 0, sizeof *w);
    w->node = node;
    w->win = MPI_WIN_NULL;
}

/* Node rank 0 allocates the slots and a page to spare; every rank aligns its view to a page
 * (the window is mapped at a page boundary in every process, so the offset is the same). */
char *node_stage_window(node_stage *w, size_t *bytes)
{
    if (w->win == MPI_WIN_NULL) {
        int L = w->node->size;
        w->piece = (piece_bytes + PAGE - 1) / PAGE * PAGE;
        w->bytes = 2 * (size_t)L * w->piece;
        size_t total = w->bytes + PAGE;
        char *mine, *base;
        if (MPI_Win_allocate_shared(w->node->rank == 0 ? (MPI_Aint)total : 0, 1, MPI_INFO_NULL,
                                    w->node->comm, &mine, &w->win) != MPI_SUCCESS)
            fatal_error("host-staged allreduce: cannot allocate a %zu-byte shared window", total);
        MPI_Aint size;
        int disp;
        MPI_Win_shared_query(w->win, 0, &size, &disp, &base);
        if ((size_t)size < total)
            fatal_error("host-staged allreduce: window of %zu bytes, %zu needed", (size_t)size,
                        total);
        w->slots = base + ((PAGE - ((uintptr_t)base & (PAGE - 1))) & (PAGE - 1));
        w->ptrs = malloc((size_t)L * sizeof *w->ptrs);
        if (!w->ptrs)
            fatal_error("host-staged allreduce: out of memory for %d ranks", L);
    }
    *bytes = w->bytes;
    return w->slots;
}

static char *slot(const node_stage *w, unsigned long seq, int r)
{
    return w->slots + ((seq & 1) * (size_t)w->node->size + (size_t)r) * w->piece;
}

void node_stage_allreduce(node_stage *w, void *buf_, size_t n, shm_elem t, float scale,
                          const node_stage_ops *ops, void *ctx)
{
    if (n == 0)
        return; /* every rank has the same n: none meets the others */
    size_t bytes;
    node_stage_window(w, &bytes);
    char *buf = buf_;
    int L = w->node->size, me = w->node->rank;
    size_t es = t == SHM_F16 ? 2 : 4, per = w->piece / es;
    ops->down(ctx, buf, slot(w, w->seq, me), (n < per ? n : per) * es);
    for (size_t off = 0; off < n; off += per, w->seq++) {
        size_t m = n - off < per ? n - off : per;
        ops->down_wait(ctx);   /* my piece is in my slot */
        ops->reduce_wait(ctx); /* my reads of the other set (the piece before) are done */
        shm_node_barrier(w->node);
        /* Every rank's piece is in; nobody reads the other set any more: the next piece may go
         * down into it while this one is summed. */
        if (off + per < n) {
            size_t next = n - off - per < per ? n - off - per : per;
            ops->down(ctx, buf + (off + per) * es, slot(w, w->seq + 1, me), next * es);
        }
        for (int r = 0; r < L; r++)
            w->ptrs[r] = slot(w, w->seq, r);
        ops->reduce(ctx, buf + off * es, w->ptrs, me, L, m, t, scale);
    }
    ops->reduce_wait(ctx); /* the result is in buf; the next call's first copy down goes to the
                              set this call's last piece but one used, read before its barrier */
}

void node_stage_free(node_stage *w)
{
    if (w->win != MPI_WIN_NULL)
        MPI_Win_free(&w->win);
    free(w->ptrs);
    w->win = MPI_WIN_NULL;
    w->slots = NULL;
    w->ptrs = NULL;
    w->bytes = 0;
}
