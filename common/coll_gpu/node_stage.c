/* node_stage.c — one host's ranks reduce through pinned slots, piece by piece. See node_stage.h.
 * Public: node_stage_init, node_stage_window, node_stage_attach, node_stage_allreduce,
 *         node_stage_free, node_stage_set_piece_bytes, node_stage_piece_bytes. */
#include "coll_gpu/node_stage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/fatal.h"

/* 4 MiB slots: a copy of 4 MiB takes ~75 us at the 55 GB/s an H200 copies each way, well above
 * a wait on the GPU and a barrier (~10 us together), and 64 MiB then runs as 16 pieces, of which
 * only the first copy down and the last sum are not overlapped with another piece's copy. */
#define DEFAULT_PIECE ((size_t)4 << 20)
#define PAGE ((size_t)4096)

static size_t piece_bytes = DEFAULT_PIECE;

void node_stage_set_piece_bytes(size_t bytes) { piece_bytes = bytes ? bytes : DEFAULT_PIECE; }
size_t node_stage_piece_bytes(void) { return (piece_bytes + PAGE - 1) / PAGE * PAGE; }

void node_stage_init(node_stage *w, shm_node *node)
{
    memset(w, 0, sizeof *w);
    w->node = node;
}

/* Node rank 0: a new segment of bytes under name, its pages reserved now (posix_fallocate: a
 * full /dev/shm says ENOSPC here, not SIGBUS at the first copy). 0, or errno with what failed. */
static int create_segment(const char *name, size_t bytes, const char **step)
{
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
        *step = "shm_open";
        return errno;
    }
    int err = posix_fallocate(fd, 0, (off_t)bytes);
    *step = "posix_fallocate";
    close(fd);
    if (err)
        shm_unlink(name);
    return err;
}

/* Every rank: the segment mapped into w->slots. 0, or errno with what failed. */
static int map_segment(node_stage *w, const char *name, const char **step)
{
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0) {
        *step = "shm_open";
        return errno;
    }
    void *p = mmap(NULL, w->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int err = p == MAP_FAILED ? errno : 0;
    close(fd); /* the mapping stays */
    *step = "mmap";
    if (!err)
        w->slots = p;
    return err;
}

/* The per-rank tables, for the node's L ranks. */
static void tables(node_stage *w)
{
    int L = w->node->size;
    w->ptrs = malloc((size_t)L * sizeof *w->ptrs);
    w->base = malloc((size_t)L * sizeof *w->base);
    if (!w->ptrs || !w->base)
        fatal_error("host-staged allreduce: out of memory for %d ranks", L);
}

void node_stage_attach(node_stage *w, char *const *bases, size_t piece)
{
    node_stage_free(w);
    tables(w);
    memcpy(w->base, bases, (size_t)w->node->size * sizeof *w->base);
    w->piece = piece;
}

char *node_stage_window(node_stage *w, size_t *bytes)
{
    if (w->base && !w->slots) { /* an attached window: no segment beside it */
        *bytes = 0;
        return NULL;
    }
    if (!w->slots && !w->failed) {
        static unsigned made; /* windows this process made: a fresh name each */
        int L = w->node->size, rank = w->node->rank;
        w->piece = node_stage_piece_bytes();
        w->bytes = 2 * (size_t)L * w->piece;
        char name[64] = "";
        int err = 0, created = 0;
        const char *step = "";
        if (rank == 0) {
            snprintf(name, sizeof name, "/hvdlab-stage-%ld-%u", (long)getpid(), made++);
            err = create_segment(name, w->bytes, &step);
            created = !err;
        }
        MPI_Bcast(name, sizeof name, MPI_CHAR, 0, w->node->comm);
        MPI_Bcast(&err, 1, MPI_INT, 0, w->node->comm);
        if (!err)
            err = map_segment(w, name, &step);
        else if (rank != 0)
            step = ""; /* rank 0 says why */
        int ok = err == 0, all = 0;
        MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, w->node->comm);
        if (created)
            shm_unlink(name); /* every rank has mapped it or given up: the name may go */
        if (err && *step)
            snprintf(w->error, sizeof w->error, "%s of the %zu-byte segment %s in /dev/shm: %s",
                     step, w->bytes, name, strerror(err));
        if (!all) {
            node_stage_free(w);
            w->failed = 1;
        } else {
            tables(w);
            for (int r = 0; r < L; r++) /* rank r's two slots side by side */
                w->base[r] = w->slots + 2 * (size_t)r * w->piece;
        }
    }
    *bytes = w->slots ? w->bytes : 0;
    return w->slots;
}

static char *slot(const node_stage *w, unsigned long seq, int r)
{
    return w->base[r] + (seq & 1) * w->piece;
}

void node_stage_allreduce(node_stage *w, void *buf_, size_t n, shm_elem t, float scale,
                          const node_stage_ops *ops, void *ctx)
{
    if (n == 0)
        return; /* every rank has the same n: none meets the others */
    size_t bytes;
    if (!w->base && !node_stage_window(w, &bytes))
        fatal_error("host-staged allreduce: no shared window (%s)", w->error[0] ? w->error
                                                                          : "another rank's");
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
    if (w->slots)
        munmap(w->slots, w->bytes);
    free(w->ptrs);
    free(w->base);
    w->slots = NULL;
    w->ptrs = NULL;
    w->base = NULL;
}
