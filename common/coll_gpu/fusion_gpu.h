/* fusion_gpu.h — a fusion group that holds device tensors (CUDA build).
 *
 * The group is cut into runs of entries going the same way (fusion_entry.gpu): NCCL runs are
 * reduced on the GPU (in place when they are float and back to back, the flat gradient buffer;
 * otherwise through a device fusion buffer, fp16 cast there by a kernel); the other runs are
 * staged through pinned host memory to the ring (staged.h). Every rank cuts alike, since the
 * ranks agree on each tensor's way (the collective check compares it). Returns when the results
 * are in the tensors.
 */
#ifndef HVDLAB_FUSION_GPU_H
#define HVDLAB_FUSION_GPU_H

#include <mpi.h>

#include "coll/fusion.h"

/* fusion_entry.gpu of a device tensor: the way hvd/ chose for it (coll/ tells only host from
 * device). */
enum { FUSION_STAGED = 1, FUSION_NCCL = 2 };

/* scale: 1 for SUM, 1/size for AVERAGE. */
void fusion_gpu_reduce(MPI_Comm comm, const fusion_entry *e, size_t len, float scale,
                       ring_workspace *ws, fusion_stats *st);
/* Frees the device fusion buffer and the staging buffers. */
void fusion_gpu_free(void);

#endif
