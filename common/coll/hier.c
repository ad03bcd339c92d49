/* hier.c — host topology and the hierarchical allreduce. See hier.h.
 * Public: hier_topo_init, hier_topo_free, hier_allreduce. */
#include "coll/hier.h"

#include <stdint.h>

void hier_topo_init(hier_topo *t, MPI_Comm comm, int group_size)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &t->size);
    t->comm = comm;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &t->node);
    if (group_size > 0) { /* test hosts: a subset of a real host, so the window still maps */
        MPI_Comm host = t->node;
        MPI_Comm_split(host, rank / group_size, rank, &t->node);
        MPI_Comm_free(&host);
    }
    int node_rank;
    MPI_Comm_rank(t->node, &node_rank);
    int leader = node_rank == 0;
    MPI_Allreduce(&leader, &t->nhosts, 1, MPI_INT, MPI_SUM, comm);
    MPI_Comm_split(comm, leader ? 0 : MPI_UNDEFINED, rank, &t->leaders);
    shm_node_init(&t->shm, t->node);
}

void hier_topo_free(hier_topo *t)
{
    shm_node_free(&t->shm);
    if (t->leaders != MPI_COMM_NULL)
        MPI_Comm_free(&t->leaders);
    MPI_Comm_free(&t->node);
}

static void mark_phase(hier_mark_fn mark, void *ctx, const char *activity, char phase)
{
    if (mark)
        mark(activity, phase, ctx);
}

void hier_allreduce(hier_topo *t, void *buf, size_t n, int fp16, float scale, ring_workspace *ws,
                    hier_mark_fn mark, void *ctx)
{
    shm_elem e = fp16 ? SHM_F16 : SHM_F32;
    mark_phase(mark, ctx, "SHM_REDUCE", 'B');
    shm_reduce_to_root(&t->shm, buf, n, e);
    mark_phase(mark, ctx, "SHM_REDUCE", 'E');
    mark_phase(mark, ctx, "MPI_ALLREDUCE", 'B');
    if (t->leaders != MPI_COMM_NULL) {
        if (fp16)
            ring_allreduce_f16(t->leaders, buf, n, scale, ws);
        else
            ring_allreduce_f32(t->leaders, buf, n, scale, ws);
    }
    mark_phase(mark, ctx, "MPI_ALLREDUCE", 'E');
    mark_phase(mark, ctx, "SHM_BROADCAST", 'B');
    shm_broadcast_from_root(&t->shm, buf, n, e);
    mark_phase(mark, ctx, "SHM_BROADCAST", 'E');
}
