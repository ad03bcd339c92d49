/* emu_stream.h — the CPU emulator's streams: work on a stream the kit created runs late, when
 * the host must have it (emu_stream.c).
 *
 * On a GPU a copy or a kernel queued on a stream runs some time after the call returns, and the
 * host may rely on it only after a wait: cudaStreamSynchronize, cudaEventSynchronize, a
 * cudaStreamQuery that says done, cudaDeviceSynchronize, or a call that synchronizes the device
 * (cudaFree, cudaFreeHost, cudaHostUnregister); a synchronous cudaMemcpy or cudaMemset waits for
 * the default stream. Here such work waits in its stream's queue until one of those, and then
 * runs, in order; flushing one stream runs no other. So host code that reads a copy's result
 * before it waited for it reads what was there before, host code that overwrites a copy's source
 * too early changes what the copy moves, and work on one stream that needs another's, with
 * nothing to order them, runs before it: the suites' checks see all three. The default stream
 * (NULL, cudaStreamLegacy, cudaStreamPerThread) is one more queue, ordered with none of the kit's
 * streams, which are all non-blocking.
 *
 * Public: emu_stream_enqueue, emu_stream_flush, emu_stream_flush_all.
 */
#ifndef HVDLAB_EMU_STREAM_H
#define HVDLAB_EMU_STREAM_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Queues run(arg) on s (NULL and CUDA's special handles: the default stream). */
void emu_stream_enqueue(cudaStream_t s, void (*run)(void *), void *arg);
/* Runs what s has queued, in order. */
void emu_stream_flush(cudaStream_t s);
/* Every stream's queue. */
void emu_stream_flush_all(void);

#ifdef __cplusplus
}
#endif

#endif
