/* staged_node.h — the host-staged allreduce of device buffers summed on the GPUs
 * (HVDLAB_STAGED_REDUCE auto, for groups from 2 MiB, gpu or ipc): node_stage.h's protocol with
 * CUDA copies and kernels.
 *
 * For the ranks of one host that stage through the host (they share GPUs: NCCL refuses them):
 * each rank's buffer goes down in pieces into its slot of a shared window pinned with
 * cudaHostRegister in every rank, and each rank takes the others' pieces up and adds them on
 * its GPU (fusion_cuda_sum_ranks). No CPU adds a byte: the host's reduction is what held the
 * CPU's way (HVDLAB_STAGED_REDUCE=host) to 12-16 % of its copy ceiling on an H200 and an H100,
 * where this way reached 38-40 % (docs/benchmarks.md). Only host memory is handed
 * to MPI (the window; its barrier is the host's shm barrier). CUDA builds only.
 *
 * With HVDLAB_STAGED_REDUCE=ipc the window is in GPU memory instead (ipc_window.h): each rank's
 * slots are its own cudaMalloc, opened by the others through CUDA IPC; a piece goes into its
 * slot by a copy within the GPU and the sum reads the others' slots where they lie, so no piece
 * passes through the host. Where a rank cannot export or open, the host's window serves. With
 * auto both windows are open (the GPUs' 64 MiB a rank), and a group takes the GPUs' from
 * gpu_ops_node_ipc_min_bytes (8 MiB), the host's below: IPC's fixed cost is the larger, its
 * speed far the higher (gpu_ops.h). Both windows' calls meet at the host's one barrier, in the
 * same order on every rank; a call's barrier comes after every rank's reads of the call before,
 * whichever window that used, so a window's slots are never written while another reads them.
 */
#ifndef HVDLAB_STAGED_NODE_H
#define HVDLAB_STAGED_NODE_H

#include <mpi.h>
#include <stddef.h>

/* Whether a device group of bytes on the wire on comm may take this path: HVDLAB_STAGED_REDUCE
 * auto, gpu or ipc (gpu_ops.h says the job may: every rank stages through the host, every rank
 * has a GPU, all on one host; fusion_gpu.c also asks gpu_ops_node_reduce_min_bytes of the
 * group's size), comm is the host's (allreduce.h), and every rank could pin the shared window
 * or the group goes through the GPUs' window (auto from the IPC size, ipc), which needs no
 * pinning. Collective over comm the first time it gets that far (it allocates and pins the
 * windows); the same answer on every rank. */
int staged_node_usable(MPI_Comm comm, size_t bytes);
#ifdef HVDLAB_CUDA
#include <cuda_runtime_api.h>
/* Collective over the comm staged_node_usable said 1 for, in place: dev (device memory, n floats
 * or IEEE halves) = scale * (sum over the ranks), the CPU runtime's bits for one host. Its copies
 * down go on s, after the work there that wrote dev. what: "allreduce \"name\"", for errors. */
void staged_node_allreduce(void *dev, size_t n, int fp16, float scale, cudaStream_t s,
                           const char *what);
#endif
/* The timeline's name for a sum on this path of a group of these bytes on the wire:
 * IPC_GPU_ALLREDUCE where it goes through the window on the GPUs, else STAGED_GPU_ALLREDUCE.
 * After staged_node_usable. */
const char *staged_node_activity(size_t bytes);
/* Unpins and unmaps the window, frees the device scratch and the stream (allreduce_free: the
 * window belongs to the host's ranks as allreduce_init found them). */
void staged_node_free(void);

#endif
