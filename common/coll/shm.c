/* shm.c — the host's ranks reduce through one shared window. See shm.h.
 * Public: shm_node_init, shm_node_free, shm_allreduce, shm_reduce_to_root,
 *         shm_broadcast_from_root, shm_set_piece_bytes, shm_windows_open, shm_node_board,
 *         shm_node_barrier, shm_set_whole_bytes. */
#include "coll/shm.h"

#include <linux/futex.h>
#include <stdatomic.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/fatal.h"
#include "base/timer.h"
#include "coll/ring.h"

/* 1 MiB slots: a piece of every rank (2 x 1 MiB with 2 ranks, 4 x with 4) stays in the shared
 * last-level cache between its copy in, its reduction and its copy out, and a barrier pair per
 * MiB costs little next to the copies (measured with bench/allreduce --variants). */
#define DEFAULT_PIECE ((size_t)1 << 20)
#define HEADER ((size_t)4096) /* the barrier, then the board (shm.h), on a page of their own */
#define BOARD_OFFSET ((size_t)256)
/* Polls before a rank waiting at the barrier sleeps on a futex. With a core per rank, ~1 ms
 * (a woken rank waits for the scheduler, which on a busy machine costs more than the poll: the
 * medians of bench/allreduce under load said so); with more ranks on the host than cores, a few
 * microseconds (a polling rank would hold the core the awaited rank needs). */
#define SPINS_OWN_CORE (1 << 17)
#define SPINS_SHARED_CORE 256
/* With more ranks than cores, a waiter then yields its core for up to 1 ms before it sleeps: the
 * rank it waits for is often runnable on the same core, and a yield hands that rank the core at
 * once where a futex sleep costs a wake-up through the scheduler (bench/allreduce, 4 ranks on 2
 * cores, 64 KiB: 67 -> 36 us per call, median; 1 MiB: 166 -> 133 us). A longer wait (a rank
 * still computing) sleeps, and costs the others nothing. */
#define YIELD_SECONDS 1e-3

/* With more ranks than cores, pieces up to this size are summed whole on every rank after one
 * barrier instead of a slice per rank between two: a barrier costs a trip through the scheduler
 * there, more than the L-fold additions of a small piece (bench/allreduce --shm-whole). */
#define DEFAULT_WHOLE ((size_t)64 << 10)

static size_t piece_bytes = DEFAULT_PIECE, whole_bytes = (size_t)-1; /* -1: by the cores */
static int windows_open;

void shm_set_piece_bytes(size_t bytes) { piece_bytes = bytes ? bytes : DEFAULT_PIECE; }
void shm_set_whole_bytes(size_t bytes) { whole_bytes = bytes; }
int shm_windows_open(void) { return windows_open; }

typedef struct {
    atomic_uint count;    /* ranks arrived at the current barrier */
    char pad[60];
    atomic_uint gen;      /* barriers completed: the futex word */
    atomic_uint sleepers; /* ranks asleep on it, or about to be */
} barrier_header;

void shm_node_init(shm_node *s, MPI_Comm comm)
{
    memset(s, 0, sizeof *s);
    s->comm = comm;
    s->win = MPI_WIN_NULL;
    MPI_Comm_rank(comm, &s->rank);
    MPI_Comm_size(comm, &s->size);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    s->shared_cores = cores > 0 && s->size > cores;
    s->spins = s->shared_cores ? SPINS_SHARED_CORE : SPINS_OWN_CORE;
}

void shm_node_free(shm_node *s)
{
    if (s->win != MPI_WIN_NULL) {
        MPI_Win_free(&s->win);
        windows_open--;
    }
    s->base = NULL;
    s->cma = 0; /* a new window, a new probe (cma.c) */
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
        atomic_init(&h->sleepers, 0);
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

/* A shared (not process-private) futex: the window is mapped by every rank of the host. */
static void futex_wait(atomic_uint *word, unsigned val)
{
    syscall(SYS_futex, (unsigned *)word, FUTEX_WAIT, val, NULL, NULL, 0);
}

static void futex_wake_all(atomic_uint *word)
{
    syscall(SYS_futex, (unsigned *)word, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
}

/* Sense by generation: the last rank to arrive resets the count and opens the next generation.
 * Release/acquire make every rank's writes before the barrier visible to every rank after it.
 * A waiter first polls (and, with more ranks than cores, yields), then sleeps; sleepers and gen
 * are sequentially consistent, so either
 * the opener sees a sleeper and wakes it, or the sleeper sees the new generation (and
 * FUTEX_WAIT returns at once when gen has moved on). */
static void node_barrier(const shm_node *s, int spins, int yield)
{
    barrier_header *h = (barrier_header *)s->base;
    unsigned g = atomic_load_explicit(&h->gen, memory_order_acquire);
    if (atomic_fetch_add_explicit(&h->count, 1, memory_order_acq_rel) == (unsigned)s->size - 1) {
        atomic_store_explicit(&h->count, 0, memory_order_relaxed);
        atomic_store(&h->gen, g + 1);
        if (atomic_load(&h->sleepers))
            futex_wake_all(&h->gen);
        return;
    }
    for (int spin = 0; spin < spins; spin++) {
        if (atomic_load_explicit(&h->gen, memory_order_acquire) != g)
            return;
        cpu_relax();
    }
    if (yield && s->shared_cores) {
        double t0 = timer_seconds();
        do {
            if (atomic_load_explicit(&h->gen, memory_order_acquire) != g)
                return;
            sched_yield();
        } while (timer_seconds() - t0 < YIELD_SECONDS);
    }
    atomic_fetch_add(&h->sleepers, 1);
    while (atomic_load(&h->gen) == g)
        futex_wait(&h->gen, g);
    atomic_fetch_sub(&h->sleepers, 1);
}

char *shm_node_board(shm_node *s)
{
    ensure_window(s);
    return s->base + BOARD_OFFSET;
}

void shm_node_barrier(shm_node *s)
{
    ensure_window(s);
    node_barrier(s, s->spins, 1);
}

static char *slot(const shm_node *s, unsigned long seq, int r)
{
    return s->base + HEADER + ((seq & 1) * (size_t)s->size + (size_t)r) * s->piece;
}

static size_t esize_of(shm_elem t) { return t == SHM_F16 ? 2 : 4; }

/* Elements summed per step of the slice reduction: an accumulator that stays in L1. */
#define BLOCK_BYTES ((size_t)16 << 10)

/* This rank's slice [b, e) of the piece: acc = x_0 + x_1 + ... in local-rank order (the ring's
 * kernels: the last addition applies scale), where x_r is rank r's slot and x_me this rank's
 * own buffer (it never copied its slice in). The sum goes to this rank's slot, for the others
 * to copy out, and, when out is not NULL, to out (this rank's buffer) as well. */
static void reduce_slice(const shm_node *s, unsigned long seq, size_t b, size_t e,
                         const char *mine, char *out, shm_elem t, float scale)
{
    size_t es = esize_of(t), per = BLOCK_BYTES / es;
    void (*add)(void *, const void *, size_t, float) = t == SHM_F16 ? ring_add_f16 : ring_add_f32;
    _Alignas(64) char acc[BLOCK_BYTES];
    char *shared = slot(s, seq, s->rank);
    for (size_t i = b; i < e; i += per) {
        size_t k = e - i < per ? e - i : per;
        for (int r = 0; r < s->size; r++) {
            const char *x = r == s->rank ? mine + i * es : slot(s, seq, r) + i * es;
            float sc = r == s->size - 1 ? scale : 1.0f;
            if (r == 0) {
                memcpy(acc, x, k * es);
                if (s->size == 1 && scale != 1.0f)
                    (t == SHM_F16 ? ring_scale_f16 : ring_scale_f32)(acc, k, scale);
            } else {
                add(acc, x, k, sc);
            }
        }
        memcpy(shared + i * es, acc, k * es);
        if (out)
            memcpy(out + i * es, acc, k * es);
    }
}

/* The whole piece, on every rank: the slots' sum in local-rank order into out (the same bits as
 * reduce_slice's). */
static void reduce_whole(const shm_node *s, unsigned long seq, size_t m, char *out, shm_elem t,
                         float scale)
{
    size_t es = esize_of(t);
    void (*add)(void *, const void *, size_t, float) = t == SHM_F16 ? ring_add_f16 : ring_add_f32;
    if (s->rank != 0)
        memcpy(out, slot(s, seq, 0), m * es);
    for (int r = 1; r < s->size; r++)
        add(out, slot(s, seq, r), m, r == s->size - 1 ? scale : 1.0f);
}

/* Pieces of buf: each rank copies in all but its own slice, reduces its own slice, and copies
 * the others' sums out: to every rank (all = 1) or to node rank 0 only. A rank moves 2(L-1)/L
 * of the piece through the window, as a ring moves through MPI. */
static void reduce_pieces(shm_node *s, char *buf, size_t n, shm_elem t, float scale, int all)
{
    ensure_window(s);
    size_t es = esize_of(t), per = s->piece / es;
    int L = s->size, me = s->rank;
    size_t whole = whole_bytes != (size_t)-1 ? whole_bytes : s->shared_cores ? DEFAULT_WHOLE : 0;
    for (size_t off = 0; off < n; off += per, s->seq++) {
        size_t m = n - off < per ? n - off : per;
        char *piece = buf + off * es, *mine = slot(s, s->seq, me);
        if (all && m * es <= whole) { /* one barrier: every rank sums the whole piece */
            memcpy(mine, piece, m * es);
            node_barrier(s, s->spins, 1);
            reduce_whole(s, s->seq, m, piece, t, scale);
            continue;
        }
        size_t b = ring_chunk_begin(m, L, me), e = ring_chunk_begin(m, L, me + 1);
        memcpy(mine, piece, b * es); /* before and after my slice */
        memcpy(mine + e * es, piece + e * es, (m - e) * es);
        node_barrier(s, s->spins, 1);
        reduce_slice(s, s->seq, b, e, piece, all || me == 0 ? piece : NULL, t, scale);
        node_barrier(s, s->spins, 1);
        if (!all && me != 0)
            continue;
        for (int r = 0; r < L; r++) {
            if (r == me)
                continue;
            size_t rb = ring_chunk_begin(m, L, r), re = ring_chunk_begin(m, L, r + 1);
            memcpy(piece + rb * es, slot(s, s->seq, r) + rb * es, (re - rb) * es);
        }
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
        /* the piece is in; the next write to this set waits for the next barrier. The first
         * piece's wait spans the leaders' ring across hosts: the others sleep soon, without
         * the yield phase, leaving the cores to it (namespace hosts share them) */
        node_barrier(s, off == 0 ? SPINS_SHARED_CORE : s->spins, off != 0);
        if (s->rank != 0)
            memcpy(buf + off * es, slot(s, s->seq, 0), m * es);
    }
}
