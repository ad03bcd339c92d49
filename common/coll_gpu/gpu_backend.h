/* gpu_backend.h — the GPU's ways (coll/backend.h) for hvd_init's table: NCCL, then host-staged.
 *
 * A group holding any device tensor goes to fusion_gpu.c, which cuts it into its NCCL and
 * staged runs; a broadcast or allgather of a device tensor goes to NCCL or through pinned host
 * memory (staged.h), as gpu_ops.c chose at hvd_init. A CPU build has no rows.
 */
#ifndef HVDLAB_GPU_BACKEND_H
#define HVDLAB_GPU_BACKEND_H

#include <stddef.h>

#include "coll/backend.h"

/* Collective-free; after gpu_ops_init. Puts this build's rows at rows[0..] and returns how many
 * (at most GPU_BACKEND_ROWS); hands allreduce.c the release of the host's window that the
 * staged path maps (staged_node.h). */
#define GPU_BACKEND_ROWS 2
size_t gpu_backend_rows(const coll_backend **rows);

#endif
