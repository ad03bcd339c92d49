/* allreduce.h — which algorithm reduces a fused host buffer: the ring, the host's shared memory,
 * or the hierarchy of both.
 *
 * - RING (ring.h): MPI point-to-point around all ranks. Any layout.
 * - SHM (shm.h): every rank of the job on one host: the ranks reduce through one shared window,
 *   no MPI message at all. Chosen by default when every rank is on one host, for small buffers
 *   and for buffers not on huge pages (allreduce.c says what bench/allreduce measured).
 * - CMA (cma.h): every rank on one host: each rank reads the others' buffers with one kernel
 *   copy (process_vm_readv/writev), no staging copy. Chosen by default on one host for buffers
 *   of memory_alloc's (huge pages) from ALLREDUCE_CMA_FROM_*, unless some ranks stage from a
 *   GPU and others have none (allreduce_init's buffers_mixed); where the kernel forbids the
 *   reads, SHM runs instead. The buffer's kind is each rank's own, so where it decides, the
 *   ranks agree first (cma_all_agree: one barrier): CMA only if every rank's is memory_alloc's.
 * - HIERARCHICAL (hier.h): reduce within each host, ring across the hosts' leaders, broadcast
 *   within each host. Chosen when HVD_HIERARCHICAL_ALLREDUCE=1 and there are several hosts
 *   (with one host the SHM path is the same thing minus a copy).
 * Every path gives every rank the same bits; they differ from one another only in the order in
 * which the ranks' values are added (hier.h, shm.h).
 */
#ifndef HVDLAB_ALLREDUCE_H
#define HVDLAB_ALLREDUCE_H

#include <mpi.h>
#include <stddef.h>

#include "coll/fusion.h"
#include "coll/ring.h"
#include "coll/shm.h"

typedef enum {
    ALLREDUCE_AUTO = 0, /* by layout and size, as above */
    ALLREDUCE_RING,
    ALLREDUCE_SHM,      /* forced on several hosts: the ring instead (no window spans hosts) */
    ALLREDUCE_HIERARCHICAL,
    ALLREDUCE_CMA       /* likewise; where the host forbids its reads: SHM (cma.h) */
} allreduce_path;

/* Collective over comm (hvd_init): finds the hosts. hierarchical: HVD_HIERARCHICAL_ALLREDUCE;
 * group_size: HVD_HOST_GROUP_SIZE, tests only (hier.h), 0 = real hosts; buffers_mixed: 1 when
 * some ranks' groups lie in staging buffers and others' in the callers' memory (the same on
 * every rank; hvd_init passes what the GPU collectives found), so that a rank's own buffer
 * never picks the single copy. */
void allreduce_init(MPI_Comm comm, int hierarchical, int group_size, int buffers_mixed);
/* Collective (hvd_shutdown): frees the communicators and the shared window, after the window's
 * user (allreduce_set_window_user) has let go of it. */
void allreduce_free(void);
/* release: called by allreduce_free before the host's window goes (each time the hosts are
 * found again too), by a layer above that maps the window for itself (NULL: none). */
void allreduce_set_window_user(void (*release)(void));

/* Collective over comm, in place: what the host's way (host_backend.c) and the staged one run
 * for a group of len entries (their timeline marks). fp16: buf holds IEEE half values. A comm
 * other than allreduce_init's goes round the ring. */
void allreduce_run(MPI_Comm comm, void *buf, size_t n, int fp16, float scale, ring_workspace *ws,
                   const fusion_entry *e, size_t len);

/* The path allreduce_run takes for buf, of this many bytes, on allreduce_init's comm when every
 * rank's buffer is of buf's kind (buf: only whether it lies on huge pages matters, base/memory.h;
 * NULL: it does not); where the kinds differ, SHM instead of CMA. */
allreduce_path allreduce_choice(const void *buf, size_t bytes);
/* One host, a buffer on huge pages: the single copy (CMA) from this many bytes on, with a core
 * per rank and with more ranks than cores (allreduce.c says what was measured). */
#define ALLREDUCE_CMA_FROM_OWN_CORES ((size_t)128 << 10)
#define ALLREDUCE_CMA_FROM_SHARED_CORES ((size_t)1 << 20)
const char *allreduce_path_name(allreduce_path p);
int allreduce_hosts(void); /* hosts found by allreduce_init (1 before it) */
/* The host's ranks and their shared window (shm.h) when comm is allreduce_init's, has more than
 * one rank and lies on one host; NULL otherwise. The same answer on every rank. */
shm_node *allreduce_host_node(MPI_Comm comm);

/* Tests and benchmarks, on every rank at the same point between calls: take this path whatever
 * the size (ALLREDUCE_AUTO: back to the default), and find the hosts again with these
 * settings (collective). */
void allreduce_force_path(allreduce_path p);
void allreduce_reconfigure(int hierarchical, int group_size);
/* Benchmarks (collective): drop the shared window, so that the next call allocates one with the
 * piece size shm_set_piece_bytes set. */
void allreduce_new_window(void);

#endif
