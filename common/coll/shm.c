/* shm.c — the host's ranks reduce through one shared window. See shm.h.
 * Public: shm_node_init, shm_node_free, shm_allreduce, shm_reduce_to_root,
 *         shm_broadcast_from_root, shm_set_piece_bytes, shm_windows_open. */
#include "coll/shm.h"

#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "base/fatal.h"
#include "coll/ring.h"

/* 1 MiB slots: a piece of every rank (2 x 1 MiB with 2 ranks, 4 x with 4) stays in the shared
 * last-level cache between its copy in, its reduction and its copy out, and a barrier pair per
 * MiB costs little next to the copies (measured with bench/allreduce --variants). */
#define DEFAULT_PIECE ((size_t)1 << 20)
#define HEADER ((size_t)4096) /* the barrier, on a page of its own */
#define SPINS 256             /* polls before a barrier starts yielding the core */

static size_t piece_bytes = DEFAULT_PIECE;
static int windows_open;

void shm_set_piece_bytes(size_t bytes) { piece_bytes = bytes ? bytes : DEFAULT_PIECE; }
int shm_windows_open(void) { return windows_open; }

typedef struct {
    atomic_uint count; /* ranks arrived at the current barrier */
    char pad[60];
    atomic_uint gen;   /* barriers completed */
} barrier_header;

void shm_node_init(shm_node *s, MPI_Comm comm)
{
    memset(s, 0, sizeof *s);
    s->comm = comm;
    s->win = MPI_WIN_NULL;
    MPI_Comm_rank(comm, &s->rank);
    MPI_Comm_size(comm, &s->size);
}

void shm_node_free(shm_node *s)
{
    if (s->win != MPI_WIN_NULL) {
        MPI_Win_free(&s->win);
        windows_open--;
    }
    s->base = NULL;
}

/* Allocated by node rank 0 in one piece, mapped by all; every rank touches every page now so
 * that no copy below page-faults. */
static void ensure_window(shm_node *s)
{
    if (s->win != MPI_WIN_NULL)
        return;
    s->piece = piece_bytes;
    size_t total = HEADER + 2 * (size_t)s->size * s->piece;
    char *mine;
    if (MPI_Win_allocate_shared(s->rank == 0 ? (MPI_Aint)total : 0, 1, MPI_INFO_NULL, s->comm,
                                &mine, &s->win) != MPI_SUCCESS)
        fatal_error("shared-memory allreduce: cannot allocate a %zu-byte shared window", total);
    windows_open++;
    MPI_Aint size;
    int disp;
    MPI_Win_shared_query(s->win, 0, &size, &disp, &s->base);
    if ((size_t)size < total)
        fatal_error("shared-memory allreduce: window of %zu bytes, %zu needed", (size_t)size,
                    total);
    if (s->rank == 0) {
        memset(s->base, 0, total);
        barrier_header *h = (barrier_header *)s->base;
        atomic_init(&h->count, 0);
        atomic_init(&h->gen, 0);
    }
    MPI_Barrier(s->comm);
    volatile char sink = 0;
    for (size_t off = 0; off < total; off += 4096)
        sink += ((volatile char *)s->base)[off];
    (void)sink;
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Sense by generation: the last rank to arrive resets the count and opens the next generation.
 * Release/acquire make every rank's writes before the barrier visible to every rank after it. */
static void node_barrier(const shm_node *s)
{
    barrier_header *h = (barrier_header *)s->base;
    unsigned g = atomic_load_explicit(&h->gen, memory_order_acquire);
    if (atomic_fetch_add_explicit(&h->count, 1, memory_order_acq_rel) == (unsigned)s->size - 1) {
        atomic_store_explicit(&h->count, 0, memory_order_relaxed);
        atomic_store_explicit(&h->gen, g + 1, memory_order_release);
        return;
    }
    for (int spin = 0; atomic_load_explicit(&h->gen, memory_order_acquire) == g; spin++) {
        if (spin < SPINS)
            cpu_relax();
        else
            sched_yield(); /* more ranks than free cores: let the one we wait for run */
    }
}

static char *slot(const shm_node *s, unsigned long seq, int r)
{
    return s->base + HEADER + ((seq & 1) * (size_t)s->size + (size_t)r) * s->piece;
}

static size_t esize_of(shm_elem t) { return t == SHM_F16 ? 2 : 4; }

/* This rank's slice of a piece of m elements: slot 0 += slot 1 + ... in local-rank order, the
 * last addition applying scale. */
static void reduce_slice(const shm_node *s, unsigned long seq, size_t m, shm_elem t, float scale)
{
    size_t es = esize_of(t);
    size_t b = ring_chunk_begin(m, s->size, s->rank), e = ring_chunk_begin(m, s->size, s->rank + 1);
    if (e == b)
        return;
    char *dst = slot(s, seq, 0) + b * es;
    void (*add)(void *, const void *, size_t, float) = t == SHM_F16 ? ring_add_f16 : ring_add_f32;
    if (s->size == 1) {
        if (scale != 1.0f)
            (t == SHM_F16 ? ring_scale_f16 : ring_scale_f32)(dst, e - b, scale);
        return;
    }
    for (int r = 1; r < s->size; r++)
        add(dst, slot(s, seq, r) + b * es, e - b, r == s->size - 1 ? scale : 1.0f);
}

/* Pieces of buf in, reduced slice by slice into slot 0; out to every rank (all = 1) or to node
 * rank 0 only. */
static void reduce_pieces(shm_node *s, char *buf, size_t n, shm_elem t, float scale, int all)
{
    ensure_window(s);
    size_t es = esize_of(t), per = s->piece / es;
    for (size_t off = 0; off < n; off += per, s->seq++) {
        size_t m = n - off < per ? n - off : per;
        memcpy(slot(s, s->seq, s->rank), buf + off * es, m * es);
        node_barrier(s);
        reduce_slice(s, s->seq, m, t, scale);
        node_barrier(s);
        if (all || s->rank == 0)
            memcpy(buf + off * es, slot(s, s->seq, 0), m * es);
    }
}

void shm_allreduce(shm_node *s, void *buf, size_t n, shm_elem t, float scale)
{
    reduce_pieces(s, buf, n, t, scale, 1);
}

void shm_reduce_to_root(shm_node *s, void *buf, size_t n, shm_elem t)
{
    reduce_pieces(s, buf, n, t, 1.0f, 0);
}

void shm_broadcast_from_root(shm_node *s, void *buf_, size_t n, shm_elem t)
{
    if (s->size == 1)
        return;
    ensure_window(s);
    char *buf = buf_;
    size_t es = esize_of(t), per = s->piece / es;
    for (size_t off = 0; off < n; off += per, s->seq++) {
        size_t m = n - off < per ? n - off : per;
        if (s->rank == 0)
            memcpy(slot(s, s->seq, 0), buf + off * es, m * es);
        node_barrier(s); /* the piece is in; the next write to this set waits for the next one */
        if (s->rank != 0)
            memcpy(buf + off * es, slot(s, s->seq, 0), m * es);
    }
}
