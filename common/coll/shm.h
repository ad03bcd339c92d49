/* shm.h — allreduce, reduce and broadcast among the ranks of one host through shared memory.
 *
 * The ranks of a host share one MPI-3 window (MPI_Win_allocate_shared, allocated at the first
 * call that needs it, freed by shm_node_free). A buffer goes through it in pieces, each cut
 * into one slice per rank (ring_chunk_begin): every rank copies its piece, all but its own
 * slice, into its own slot; each rank then sums its slice over the ranks (rank 0's values
 * first, then 1, 2, ...: the ring's kernels, ring.h), reading the others' slots and its own
 * buffer, and writes the sum to its buffer and to its slot; every rank then copies the other
 * slices' sums out of their owners' slots. Like the ring, a rank copies 2(L-1)/L of the buffer
 * and adds (L-1)/L of it, but with plain loads and stores: no MPI message, no system call.
 * The ranks meet at a barrier of their own in the window (spin, then yield: the ranks may
 * share cores). Two sets of slots alternate, piece after piece and call after call, so a piece
 * needs only two barriers: a slot is written again only after every rank has passed the
 * barrier that follows its last reader.
 *
 * With more ranks than cores a barrier costs a trip through the scheduler, so a small piece
 * (up to 64 KiB) is instead copied in whole by every rank and, after one barrier, summed whole by
 * every rank in the same order: one barrier, the same bits.
 *
 * Every element is summed in local-rank order (on one rank, or whole on every rank the same
 * way), so every rank ends with the same bits. With 2 ranks that is also the ring's result bit for bit (a + b == b + a); with more
 * the order of the additions differs from the ring's (float summation order).
 */
#ifndef HVDLAB_SHM_H
#define HVDLAB_SHM_H

#include <mpi.h>
#include <stddef.h>

typedef enum { SHM_F32 = 0, SHM_F16 = 1 } shm_elem; /* float, or IEEE half in uint16_t */

typedef struct {
    MPI_Comm comm; /* the host's ranks (not owned) */
    int rank, size;
    MPI_Win win;   /* MPI_WIN_NULL until first use */
    char *base;    /* the window: barrier header, then 2 sets of size slots of piece bytes */
    size_t piece;  /* bytes of one slot */
    unsigned long seq; /* pieces moved so far: picks the set, the same on every rank */
    int spins;     /* barrier polls before sleeping (shm.c) */
    int shared_cores; /* more ranks on the host than cores: waiters yield before sleeping */
    int cma;       /* single-copy reads between the ranks (cma.h): 0 not probed, 1 yes, -1 no */
} shm_node;

/* Records comm (every rank of it on this host); allocates nothing yet. */
void shm_node_init(shm_node *s, MPI_Comm comm);
/* Collective over the node's ranks when a window was allocated: frees it. */
void shm_node_free(shm_node *s);

/* Collective over the node's ranks. In place: buf = scale * (sum over the node's ranks). */
void shm_allreduce(shm_node *s, void *buf, size_t n, shm_elem t, float scale);
/* Collective: node rank 0's buf receives the sum over the node's ranks (scale 1); the others'
 * buf is left as it was. */
void shm_reduce_to_root(shm_node *s, void *buf, size_t n, shm_elem t);
/* Collective: every rank's buf receives node rank 0's. */
void shm_broadcast_from_root(shm_node *s, void *buf, size_t n, shm_elem t);

/* For other algorithms on the same host's ranks (cma.c), collective the first time (the window
 * is allocated then): the board, SHM_BOARD_BYTES in the window's header that the shm path does
 * not use, and the window's barrier (every write before it is visible to every rank after it). */
#define SHM_BOARD_BYTES ((size_t)3840)
char *shm_node_board(shm_node *s);
void shm_node_barrier(shm_node *s);

/* Benchmarks: bytes per slot for windows allocated from now on (0: the default). */
void shm_set_piece_bytes(size_t bytes);
/* Benchmarks and tests: pieces up to this many bytes are summed whole on every rank after one
 * barrier, whatever the cores (0: never; (size_t)-1: the default, shm.c's limit where the host
 * has more ranks than cores, else never). */
void shm_set_whole_bytes(size_t bytes);
/* Windows allocated and not yet freed in this process (tests: 0 after hvd_shutdown). */
int shm_windows_open(void);

#endif
