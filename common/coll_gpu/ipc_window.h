/* ipc_window.h — slots in GPU memory that the ranks of one host share through CUDA IPC, for the
 * GPU-summed staged path with HVDLAB_STAGED_REDUCE=ipc (staged_node.h).
 *
 * Each rank allocates its two slots (cudaMalloc, 2 * piece bytes) and exports them
 * (cudaIpcGetMemHandle); the host's ranks exchange the handles over MPI (host memory: 64 bytes
 * each) and each opens the others' (cudaIpcOpenMemHandle). node_stage.h's protocol then runs
 * with the window on the GPU: a piece goes into its rank's slot by a copy within the GPU, and
 * the others take it from there, so nothing passes through the host but the barriers. CUDA IPC
 * works between processes, on one GPU too (a process cannot open its own handles, and needs
 * none): it is how two ranks that share a GPU, which NCCL refuses, can still add on the GPU
 * without the host's copies. CUDA builds only.
 */
#ifndef HVDLAB_IPC_WINDOW_H
#define HVDLAB_IPC_WINDOW_H

#include <mpi.h>
#include <stddef.h>

typedef struct {
    char *mine;   /* this rank's slots (cudaMalloc) */
    char **bases; /* every rank's slots as mapped here: bases[me] == mine, others opened */
    int size, me;
} ipc_window;

/* Collective over node_comm (the host's ranks; me = this rank there): 0 with w's slots of
 * 2 * piece bytes on every rank, or -1 on every rank, w empty, when any rank could not allocate,
 * export or open (each rank that failed says why in why). */
int ipc_window_open(ipc_window *w, MPI_Comm node_comm, size_t piece, char *why, size_t len);
/* Collective over node_comm: closes the others' slots, waits until every rank has closed them,
 * then frees this rank's (CUDA leaves freeing memory another process still has open
 * undefined). */
void ipc_window_close(ipc_window *w, MPI_Comm node_comm);

#endif
