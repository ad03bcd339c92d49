/* gpu_ops.h — which way collectives on device (CUDA) tensors go: NCCL, or staged through the host.
 *
 * HVD_GPU_OPERATIONS (Horovod's HOROVOD_GPU_OPERATIONS), read at hvd_init:
 *   unset  auto: NCCL when every rank has a GPU of its own, else host-staged
 *   nccl   NCCL; a job in which two ranks share a GPU (or a rank has none) stops with one line,
 *          since NCCL refuses two ranks on one GPU
 *   mpi    host-staged: device buffers go to pinned host memory, through the host's allreduce
 *          (allreduce.h) or summed on the GPUs (HVDLAB_STAGED_REDUCE below), and back
 * The choice is made once at hvd_init for the whole job (every rank must take the same path for a
 * collective) and rank 0 says in one line which and why. Each rank uses GPU local_rank % ngpus,
 * the one hvd_pin_device picks. A CPU build, HVDLAB_DEVICE=cpu or a job with no GPU: GPU_PATH_NONE
 * and every buffer is a host buffer. The Open MPI here is not CUDA-aware: no device pointer is
 * ever handed to MPI.
 */
#ifndef HVDLAB_GPU_OPS_H
#define HVDLAB_GPU_OPS_H

#include <mpi.h>
#include <stddef.h>

typedef enum { GPU_OPS_AUTO = 0, GPU_OPS_NCCL = 1, GPU_OPS_MPI = 2 } gpu_ops_request;
typedef enum { GPU_PATH_NONE = 0, GPU_PATH_NCCL = 1, GPU_PATH_STAGED = 2 } gpu_path;

/* "", "auto", "nccl", "mpi" (any case). Returns 0, or -1 for anything else. */
int gpu_ops_parse(const char *v, gpu_ops_request *out);
const char *gpu_ops_request_name(gpu_ops_request r); /* "auto", "nccl", "mpi" */

/* HVDLAB_STAGED_REDUCE: on the host-staged path, who adds the device groups of one host's ranks.
 * auto (the default): the CPU below STAGED_REDUCE_AUTO_MIN_BYTES, the GPUs through the host's
 * window from there, and through CUDA IPC from STAGED_REDUCE_AUTO_IPC_MIN_BYTES; host: the CPU;
 * gpu: the GPUs, through a shared window of pinned host memory; ipc: the GPUs, through a window
 * in GPU memory that the ranks share by CUDA IPC (ipc_window.h), so that no piece passes through
 * the host (where a rank cannot open it, the host's window serves, said in one line).
 * Why those sizes (2 ranks on one GPU, make bench-allreduce-gpu): the host's window costs
 * ~310 us at any size up to 1 MiB, where the CPU takes 44-334 us on an H100 (2026-11-26) and
 * 47-353 us on an H200 (2026-11-27): at 1 MiB the two within 5 %, the CPU ahead on both; at
 * 2 MiB the window 1.6x the CPU on both. On the H200 IPC costs ~450 us up to 4 MiB, and is
 * 1.7x the host's window at 8 MiB and 6-7x from 64 MiB, where it passes its copy ceiling. */
typedef enum {
    STAGED_REDUCE_AUTO = 0,
    STAGED_REDUCE_HOST = 1,
    STAGED_REDUCE_GPU = 2,
    STAGED_REDUCE_IPC = 3
} staged_reduce;
#define STAGED_REDUCE_AUTO_MIN_BYTES ((size_t)2 << 20)
#define STAGED_REDUCE_AUTO_IPC_MIN_BYTES ((size_t)8 << 20)
/* "", "auto", "host", "gpu", "ipc". Returns 0, or -1 for anything else. */
int staged_reduce_parse(const char *v, staged_reduce *out);
const char *staged_reduce_name(staged_reduce r); /* "auto", "host", "gpu", "ipc" */

typedef struct {
    MPI_Comm comm;
    int rank, size, local_rank;
    gpu_ops_request request;
    staged_reduce staged_reduce; /* HVDLAB_STAGED_REDUCE: who adds staged device groups */
    int staged_hugepages;  /* HVDLAB_STAGED_HOST=hugepages: gpu_ops_staged_hugepages says 1 */
    int host_group_size;   /* HVD_HOST_GROUP_SIZE (tests: one machine plays several hosts) */
    double warn_s;  /* a wait on the GPU warns once after this long (0: never) */
    double limit_s; /* and stops the job after this long */
} gpu_ops_config;

/* Collective over c->comm. Without CUDA: nothing. */
void gpu_ops_init(const gpu_ops_config *c);
void gpu_ops_shutdown(void);
gpu_path gpu_ops_path(void);
/* 1 when device groups staged through the host may be summed on the GPUs (staged_node.h):
 * HVDLAB_STAGED_REDUCE auto, gpu or ipc, on the staged path, every rank with a GPU and every rank on
 * one host (by name). The same on every rank. Asked for with gpu where it cannot be, rank 0 says
 * why in its one line and the CPU adds as before (auto says nothing: nobody asked). */
int gpu_ops_node_reduce(void);
/* Where gpu_ops_node_reduce: the smallest group, in bytes on the wire, to go through the window
 * on the GPUs (ipc_window.h; auto: STAGED_REDUCE_AUTO_IPC_MIN_BYTES; ipc: 0), or SIZE_MAX where
 * none is asked for (gpu). */
size_t gpu_ops_node_ipc_min_bytes(void);
/* Where gpu_ops_node_reduce: the smallest group, in bytes on the wire, the GPUs add (auto:
 * STAGED_REDUCE_AUTO_MIN_BYTES; gpu and ipc: 0); the CPU adds smaller ones. */
size_t gpu_ops_node_reduce_min_bytes(void);
/* 1 when staged.c's pinned host buffer is to be huge pages registered with CUDA
 * (HVDLAB_STAGED_HOST=hugepages, checked and agreed on at hvd_init); 0: cudaMallocHost. */
int gpu_ops_staged_hugepages(void);
/* 1 when some ranks have a GPU and some have none (the same on every rank): their groups sit in
 * staging buffers on the first and in the callers' memory on the others, so allreduce.c never
 * picks the single copy by a rank's own buffer. */
int gpu_ops_ranks_mixed(void);
/* 1 when p is device (or managed) memory this rank's collectives must treat as such. */
int gpu_ops_is_device(const void *p);
/* The stream device collectives run on (a cudaStream_t); NULL: their own, after the work queued
 * so far on the legacy default stream, which comes after every blocking stream's (an event
 * recorded there; never cudaDeviceSynchronize, which waits with no limit for every stream, a
 * stuck one too). A buffer produced on another non-blocking stream needs it set. Returns the
 * stream set before (NULL: none), to put back; gpu_ops_shutdown forgets it. The caller owns the
 * stream (hvd_set_gpu_stream in hvd.h). */
void *gpu_ops_set_stream(void *stream);

#ifdef HVDLAB_CUDA
#include <cuda_runtime_api.h>
/* The stream for the collective about to start (see gpu_ops_set_stream). */
cudaStream_t gpu_ops_stream(void);
#endif

#endif
