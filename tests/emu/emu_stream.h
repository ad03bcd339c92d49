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
 * A stream may be hung (emu_stream_hang), as one holding a NCCL kernel whose peer died: its
 * queries say not ready, and a wait that would block for ever on a GPU, for it or for the whole
 * device (cudaDeviceSynchronize, cudaFree, ...), stops with one line instead.
 *
 * Public: emu_stream_enqueue, emu_stream_flush, emu_stream_flush_all, emu_stream_hang.
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
/* Every stream's queue. call: the CUDA call that waits for the whole device ("cudaFree"), which
 * stops with one line if a stream is hung; NULL: the emulator's own flush, which leaves a hung
 * stream's queue as it is. */
void emu_stream_flush_all(const char *call);
/* on: work that never finishes is queued on s (a stream the caller created); off: it finishes
 * (runs at the stream's next wait). For tests of the waits on a GPU that other work blocks. */
void emu_stream_hang(cudaStream_t s, int on);

#ifdef __cplusplus
}
#endif

#endif
