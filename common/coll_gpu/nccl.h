/* nccl.h — the job's one NCCL communicator and the NCCL calls of the collectives.
 *
 * nccl_init: rank 0 makes the ncclUniqueId, MPI_Bcast hands it out (host bytes), every rank calls
 * ncclCommInitRankConfig on its current GPU. The communicator is non-blocking: its set-up, its
 * shut-down (nccl_free) and any call that answers ncclInProgress are waited for by
 * gpu_wait_nccl, so a rank that never arrives or dies there stops the others after the limit
 * with one line (the call, the rank), not a hang. The calls below queue work on the stream given
 * and wait for it with gpu_wait (bounded, watching ncclCommGetAsyncError); buffers are device
 * memory.
 * A failing NCCL call stops the job with one line: the collective, the call and NCCL's message
 * (ncclGetErrorString and ncclGetLastError). CUDA builds only, except nccl_version.
 */
#ifndef HVDLAB_NCCL_H
#define HVDLAB_NCCL_H

#include <mpi.h>
#include <stddef.h>

/* "2.28.9", or "none" in a CPU build. */
void nccl_version(char *out, size_t len);

/* Whether a one-rank communicator can be made on GPU 0 of this process: 0, or -1 with why. */
int nccl_probe(char *why, size_t len);

#ifdef HVDLAB_CUDA
#include <cuda_runtime_api.h>

void nccl_init(MPI_Comm comm, int rank, int size); /* collective over comm */
void nccl_free(void);

/* In place over count elements, float (half = 0) or IEEE half (half = 1); avg: ncclAvg, else
 * ncclSum. Returns when done. what: "allreduce \"name\"". */
void nccl_allreduce(void *buf, size_t count, int half, int avg, cudaStream_t s, const char *what);
/* Queues the same without waiting (the caller's gpu_wait follows with nccl_wait). */
void nccl_allreduce_queue(void *buf, size_t count, int half, int avg, cudaStream_t s,
                          const char *what);
void nccl_wait(cudaStream_t s, const char *what);
/* In place, nbytes bytes from root. Returns when done. */
void nccl_broadcast(void *buf, size_t nbytes, int root, cudaStream_t s, const char *what);
/* Rank r's counts[r] floats (send: device memory, or host memory when send_host) land at
 * out + displs[r] on every rank, out being host memory of total floats: gathered on the GPU
 * (uneven counts: one ncclBroadcast per rank in a group), then copied down. Returns when done. */
void nccl_allgather_to_host(const float *send, int send_host, float *out, const size_t *counts,
                            const size_t *displs, size_t total, cudaStream_t s, const char *what);
#endif

#endif
