/* node_stage.h — allreduce among the ranks of one host whose buffers the CPU does not add: device
 * buffers, which meet only in pinned host memory, summed on each rank's GPU.
 *
 * The host's ranks share a window of slots (2 sets of one slot per rank, piece bytes each): a
 * POSIX shared-memory segment (/dev/shm, tmpfs), which the caller can pin with cudaHostRegister.
 * Not an MPI window: Open MPI may back those with a file on a disk, whose pages the kernel will
 * not pin for long (FOLL_LONGTERM), and pinning is the point. Node rank 0 creates the segment,
 * every rank maps it, and rank 0 unlinks its name at once, so nothing outlives the job. Piece by piece, each rank copies
 * its whole piece into its own slot (ops->down), the ranks meet at the host's barrier (shm.h),
 * and each rank then sums every rank's piece, in local-rank order, into its own buffer
 * (ops->reduce: the other slots go up, and one kernel adds them with the ring's arithmetic,
 * ring.h) while its copy of the next piece down already runs. The two sets alternate: a rank
 * writes a set again only after every rank has met it at a barrier that each reached with its
 * reads of that set finished.
 *
 * Each rank sends its piece down once and takes the L-1 others up. With two ranks on one GPU
 * that is one copy down and one copy up per rank, the staged path's ceiling (bench/allreduce_gpu),
 * and the two directions overlap; with more ranks the copies up grow as L-1 (the ranks sharing a
 * GPU are few). Every rank adds every element in the same order (rank 0's value first, the last
 * addition scaled), so every rank ends with the same bits: the shm path's (shm.h), and with two
 * ranks the ring's.
 *
 * The engine knows nothing of CUDA: node_stage_ops says how to copy and add (staged_node.c on the
 * GPU; the unit test with host buffers drives the same protocol with memcpy and the ring's
 * kernels).
 */
#ifndef HVDLAB_NODE_STAGE_H
#define HVDLAB_NODE_STAGE_H

#include <mpi.h>
#include <stddef.h>

#include "coll/shm.h"

typedef struct {
    /* Start copying bytes from buf (this rank's piece) into slot, this rank's. */
    void (*down)(void *ctx, const char *buf, char *slot, size_t bytes);
    /* Every down started so far has finished: the slot holds the piece. */
    void (*down_wait)(void *ctx);
    /* Start: buf[0, n) = sum over r = 0 .. L-1, in that order, of (r == me ? buf : slots[r]),
     * the ring's kernels (ring.h: the last addition applies scale; one rank: buf * scale). */
    void (*reduce)(void *ctx, char *buf, char *const *slots, int me, int L, size_t n, shm_elem t,
                   float scale);
    /* Every reduce started so far has finished: its reads of the slots too. */
    void (*reduce_wait)(void *ctx);
} node_stage_ops;

typedef struct {
    shm_node *node;  /* the host's ranks and their barrier (not owned) */
    char *slots;     /* the segment: 2 * L slots of piece bytes, page aligned; NULL until the
                        first call, and with a window attached instead */
    size_t piece;    /* bytes of one slot */
    size_t bytes;    /* of the segment */
    char **base;     /* rank r's two slots: base[r] and base[r] + piece (NULL: no window yet) */
    char **ptrs;     /* the L slots of the piece being reduced, for ops->reduce */
    unsigned long seq; /* pieces so far: picks the set, the same on every rank */
    int failed;      /* a rank could not map the segment: no window, for good */
    char error[200]; /* on a rank that could not: what failed, for its warning */
} node_stage;

/* Records the node; allocates nothing. */
void node_stage_init(node_stage *w, shm_node *node);
/* Collective over the node's ranks the first time (it maps the segment): the slots, and their
 * bytes in *bytes. NULL on every rank when any rank could not map it (/dev/shm full or missing):
 * w->error says why on those that could not, and every later call says NULL at once. */
char *node_stage_window(node_stage *w, size_t *bytes);
/* Slots that are not the segment (staged_node.c: device memory that the host's ranks share
 * through CUDA IPC): rank r's two slots of piece bytes are bases[r] and bases[r] + piece, as
 * mapped in this process (copied; not owned: node_stage_free leaves them). Local. The engine
 * then uses those slots only: node_stage_window says NULL for such a window. */
void node_stage_attach(node_stage *w, char *const *bases, size_t piece);
/* Collective over the node's ranks, where node_stage_window gave slots (or node_stage_attach
 * attached them), in place:
 * buf = scale * (sum over the node's ranks), n elements of t. ctx is passed to every op. */
void node_stage_allreduce(node_stage *w, void *buf, size_t n, shm_elem t, float scale,
                          const node_stage_ops *ops, void *ctx);
/* Unmaps the segment (local: the name is gone already) and forgets an attached window. */
void node_stage_free(node_stage *w);

/* Benchmarks and tests: bytes per slot for windows allocated from now on (0: the default). */
void node_stage_set_piece_bytes(size_t bytes);
/* Bytes per slot of the next window (node_stage_set_piece_bytes's, page-rounded): what an
 * attached window's slots are sized by, times its own factor. */
size_t node_stage_piece_bytes(void);

#endif
