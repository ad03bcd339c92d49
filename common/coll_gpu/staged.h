/* staged.h — device tensors through pinned host memory and the CPU runtime's MPI code.
 *
 * For jobs where NCCL cannot run (ranks share a GPU) or is not wanted (HVD_GPU_OPERATIONS=mpi):
 * device buffers are copied to pinned host memory (cudaMemcpyAsync, fp16 cast on the GPU first so
 * only half the bytes cross), the host buffer goes through the same allreduce (allreduce.h) or
 * MPI_Bcast as a host tensor would, and the result is copied back. Same arithmetic as the CPU
 * runtime, so the results are the CPU runtime's bits. Only host memory ever reaches MPI. CUDA
 * builds only.
 */
#ifndef HVDLAB_STAGED_H
#define HVDLAB_STAGED_H

#include <mpi.h>
#include <stddef.h>

#include "coll/fusion.h"

/* A fusion run (device and host tensors, one op and compression): packed into the pinned buffer,
 * one allreduce (allreduce_run: ring, shm, cma or hier), unpacked. scale: 1 or 1/size. */
void staged_allreduce(MPI_Comm comm, const fusion_entry *e, size_t len, float scale,
                      ring_workspace *ws, fusion_stats *st);
/* In place from root; buf is device memory on this rank (other ranks' may be host memory).
 * what: "broadcast \"name\"". */
void staged_broadcast(MPI_Comm comm, void *buf, size_t nbytes, int root, const char *what);
/* A host copy of nbytes of device memory, valid until the next staged call. */
const void *staged_download(const void *dev, size_t nbytes, const char *what);
void staged_free(void);

#endif
