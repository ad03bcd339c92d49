/* hier.h — the hosts of a job, and the hierarchical allreduce across them
 * (HVD_HIERARCHICAL_ALLREDUCE=1, Horovod's name).
 *
 * A host is the set of ranks that share memory: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED),
 * which on network-namespace "hosts" and real machines alike groups the ranks that can map one
 * window. The hierarchical allreduce reduces within each host through shared memory (shm.h)
 * into the host's leader (its lowest rank), runs the ring (ring.h) across the leaders only, and
 * broadcasts the result back within each host through shared memory. Only one rank per host
 * talks across hosts, with 1/(ranks per host) of the flat ring's cross-host traffic per host.
 * Hosts may hold different numbers of ranks (one, or all of them).
 *
 * Every rank ends with the same bits: the leaders' ring gives every leader the same result
 * (ring.h) and the broadcast copies it. Against the flat ring the sums are formed in another
 * order (host by host), so they agree within float summation order.
 */
#ifndef HVDLAB_HIER_H
#define HVDLAB_HIER_H

#include <mpi.h>
#include <stddef.h>

#include "coll/ring.h"
#include "coll/shm.h"

typedef struct {
    MPI_Comm comm;    /* the job's ranks (not owned) */
    MPI_Comm node;    /* this host's ranks, owned */
    MPI_Comm leaders; /* the hosts' leaders, owned; MPI_COMM_NULL on the other ranks */
    int nhosts;
    int size;         /* ranks in comm */
    shm_node shm;     /* the host's shared window */
} hier_topo;

/* Collective over comm. group_size > 0 (tests only: HVD_HOST_GROUP_SIZE) further cuts each
 * host into groups of ranks rank / group_size, so that one machine can play several hosts. */
void hier_topo_init(hier_topo *t, MPI_Comm comm, int group_size);
/* Collective over comm: frees the communicators and the shared window. */
void hier_topo_free(hier_topo *t);

/* Collective over comm, in place: buf = scale * (sum over all ranks). fp16: buf holds IEEE
 * half values (uint16_t). ws: the leaders' ring scratch. mark (may be NULL) is called at the
 * begin ('B') and end ('E') of each phase: "SHM_REDUCE", "MPI_ALLREDUCE" (the leaders' ring;
 * every rank marks it, the others wait through it), "SHM_BROADCAST". */
typedef void (*hier_mark_fn)(const char *activity, char phase, void *ctx);
void hier_allreduce(hier_topo *t, void *buf, size_t n, int fp16, float scale, ring_workspace *ws,
                    hier_mark_fn mark, void *ctx);

#endif
