/* gpu_wait.h — wait for a stream with a deadline, watching NCCL for asynchronous errors.
 *
 * A NCCL kernel whose peer is gone spins forever, and cudaStreamSynchronize with it. This polls
 * cudaStreamQuery instead (NCCL's documented pattern), and between polls asks
 * ncclCommGetAsyncError: an error stops the job with one line naming the call and NCCL's
 * message; no progress for limit_s seconds does the same (no ncclCommAbort first: it can hang,
 * and the job's end frees the GPU). The communicator
 * is non-blocking (nccl.c), so its set-up and shut-down are polled here as well, with the same
 * bounds. CUDA builds only.
 */
#ifndef HVDLAB_GPU_WAIT_H
#define HVDLAB_GPU_WAIT_H

#include <cuda_runtime_api.h>
#include <nccl.h>

/* warn_s: one warning line after this long (0: none); limit_s: stop after this long. rank
 * names this process in the warning. */
void gpu_wait_set_bounds(int rank, double warn_s, double limit_s);

/* Returns when the work queued on s is done. comm may be NULL (no NCCL work on s). what names
 * the call in messages: "allreduce \"grads\": ncclAllReduce". */
void gpu_wait(cudaStream_t s, ncclComm_t comm, const char *what);

/* Returns when comm's state leaves ncclInProgress: a non-blocking communicator's init,
 * finalize or call that answered ncclInProgress (NCCL's rule: no other NCCL call, and no work on
 * its streams, before). An error, or none of that within limit_s, stops the job with one line naming what ("NCCL set-up: ncclCommInitRankConfig") and this rank. */
void gpu_wait_nccl(ncclComm_t comm, const char *what);

#endif
