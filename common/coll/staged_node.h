/* staged_node.h — the host-staged allreduce of device buffers summed on the GPUs
 * (HVDLAB_STAGED_REDUCE auto, for groups from 1 MiB, or gpu): node_stage.h's protocol with CUDA
 * copies and kernels.
 *
 * For the ranks of one host that stage through the host (they share GPUs: NCCL refuses them):
 * each rank's buffer goes down in pieces into its slot of a shared window pinned with
 * cudaHostRegister in every rank, and each rank takes the others' pieces up and adds them on
 * its GPU (fusion_cuda_sum_ranks). No CPU adds a byte: the host's reduction is what held the
 * CPU's way (HVDLAB_STAGED_REDUCE=host) to 12-16 % of its copy ceiling on an H200 and an H100,
 * where this way reached 38-40 % (README). Only host memory is handed
 * to MPI (the window; its barrier is the host's shm barrier). CUDA builds only.
 *
 * With HVDLAB_STAGED_REDUCE=ipc the window is in GPU memory instead (ipc_window.h): each rank's
 * slots are its own cudaMalloc, opened by the others through CUDA IPC; a piece goes into its
 * slot by a copy within the GPU and the sum reads the others' slots where they lie, so no piece
 * passes through the host. Where a rank cannot export or open, the host's window serves.
 */
#ifndef HVDLAB_STAGED_NODE_H
#define HVDLAB_STAGED_NODE_H

#include <mpi.h>
#include <stddef.h>

/* Whether a device group on comm may take this path: HVDLAB_STAGED_REDUCE auto or gpu (gpu_ops.h
 * says the job may: every rank stages through the host, every rank has a GPU, all on one host;
 * fusion_gpu.c also asks gpu_ops_node_reduce_min_bytes of the group's size), comm is
 * the host's (allreduce.h), and every rank could pin the shared window. Collective over comm
 * the first time it gets that far (it allocates and pins the window); the same answer on every
 * rank. */
int staged_node_usable(MPI_Comm comm);
#ifdef HVDLAB_CUDA
#include <cuda_runtime_api.h>
/* Collective over the comm staged_node_usable said 1 for, in place: dev (device memory, n floats
 * or IEEE halves) = scale * (sum over the ranks), the CPU runtime's bits for one host. Its copies
 * down go on s, after the work there that wrote dev. what: "allreduce \"name\"", for errors. */
void staged_node_allreduce(void *dev, size_t n, int fp16, float scale, cudaStream_t s,
                           const char *what);
#endif
/* The timeline's name for a sum on this path: IPC_GPU_ALLREDUCE where the window is on the GPUs
 * (HVDLAB_STAGED_REDUCE=ipc, opened), else STAGED_GPU_ALLREDUCE. After staged_node_usable. */
const char *staged_node_activity(void);
/* Unpins and unmaps the window, frees the device scratch and the stream (allreduce_free: the
 * window belongs to the host's ranks as allreduce_init found them). */
void staged_node_free(void);

#endif
