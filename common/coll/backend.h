/* backend.h — the ways a collective can travel, as Horovod's operation manager holds its ops.
 *
 * hvd_init assembles a table of rows (hvd/hvd.c): the GPU's first where the build has them
 * (coll_gpu/gpu_backend.h: NCCL, then host-staged), the host's last (coll/host_backend.h), which
 * takes anything. fusion.c walks it for each fused group, hvd.c for each broadcast and allgather:
 * the first row enabled for the tensors runs the call. Fusion names no row, and no row below
 * hvd/ knows which others are in the table.
 */
#ifndef HVDLAB_BACKEND_H
#define HVDLAB_BACKEND_H

#include <mpi.h>
#include <stddef.h>

#include "coll/fusion.h"
#include "coll/ring.h"

struct coll_backend {
    const char *name; /* "nccl", "staged", "host" */
    /* 1 when this row takes these len tensors (a fused group, or one tensor alone) */
    int (*enabled)(const fusion_entry *e, size_t len);
    /* The group reduced in place over comm (scale: 1 for SUM, 1/size for AVERAGE); the calls,
     * tensors and copied bytes added to *st. */
    void (*reduce)(MPI_Comm comm, const fusion_entry *e, size_t len, float scale,
                   ring_workspace *ws, fusion_stats *st);
    /* nbytes of buf in place from root; what ("broadcast \"name\"") names it in messages. */
    void (*broadcast)(MPI_Comm comm, void *buf, size_t nbytes, int root, const char *what);
    /* Rank r's counts[r] floats land at out + displs[r] on every rank (total in all). */
    void (*allgather)(MPI_Comm comm, const float *buf, size_t n, float *out, const int *counts,
                      const int *displs, size_t total, const char *what);
    /* Frees what the row holds (hvd_shutdown, after the last call); NULL: nothing. */
    void (*shutdown)(void);
};

/* The first of the n rows enabled for the len tensors from e. The table must end with a row
 * that takes any (the host's); without one, the job stops with one line. */
const coll_backend *backend_for(const coll_backend *const *rows, size_t n, const fusion_entry *e,
                                size_t len);

#endif
