/* hvd.h — the Horovod-shaped API of hvdlab.
 *
 * hvd.init()              -> hvd_init(&argc, &argv)
 * hvd.rank()/size()       -> hvd_rank(), hvd_size(), hvd_local_rank(), hvd_local_size()
 * hvd.allreduce(t)        -> hvd_allreduce(buf, n, HVD_AVERAGE, "name")
 * hvd.broadcast(t, root)  -> hvd_broadcast(buf, n, root, "name")
 * hvd.allgather(t)        -> hvd_allgather(buf, n, &total, counts, "name")
 *
 * Before hvd_init() every call behaves as a world of size 1 (rank 0, collectives are
 * identities), which is what the untouched serial step 1 relies on.
 *
 * Environment: hvd_init reads the HVD_* variables and HVDLAB_STAGED_*; docs/api.md, "Environment
 * variables", is the one table of every variable the kit reads (make check-env-vars keeps it and
 * the code in step). Every rank must have the same values of all but HVD_TIMELINE,
 * HVD_AUTOTUNE_LOG and HVD_DEAD_RANK_CHECK_DISABLE: hvd_init compares them.
 *
 * Device tensors (CUDA build): hvd_allreduce*, hvd_broadcast* and hvd_allgather take device
 * pointers too (found with cudaPointerGetAttributes) and return with the result in place, on
 * every stream. hvd_allgather's result is host memory either way (free it). Before hvd_init
 * (the world of one) tensors are host tensors.
 */
#ifndef HVDLAB_HVD_H
#define HVDLAB_HVD_H

#include <stddef.h>

#include "base/memory.h" /* memory_alloc: buffers the collectives move fastest */
#include "base/reduce_op.h" /* hvd_op: HVD_SUM, HVD_AVERAGE */

#define HVDLAB_VERSION "0.1.0"

/* Flags for hvd_allreduce_ex / hvd_allreduce_async. */
#define HVD_COMPRESS_NONE 0
#define HVD_COMPRESS_FP16 1
#define HVD_COMPRESS_DEFAULT (-1) /* whatever HVD_COMPRESSION says */

#define HVD_DEFAULT_FUSION_THRESHOLD ((size_t)64 << 20)

int hvd_init(int *argc, char ***argv);
void hvd_shutdown(void);
int hvd_is_initialized(void);
int hvd_rank(void);
int hvd_size(void);
int hvd_local_rank(void);
int hvd_local_size(void);
void hvd_barrier(void);

/* In-place allreduce of n floats. name identifies the tensor (timeline, collective checks). */
void hvd_allreduce(float *buf, size_t n, hvd_op op, const char *name);
void hvd_allreduce_ex(float *buf, size_t n, hvd_op op, const char *name, int compression);

/* Tensor fusion: queue named tensors, then hvd_synchronize() reduces them all, fused into
 * buffers of at most HVD_FUSION_THRESHOLD bytes. Tensors that sit back to back in memory are
 * reduced where they are, with no copy. Every rank must queue the same tensors in the same order. */
void hvd_allreduce_async(float *buf, size_t n, hvd_op op, const char *name, int compression);
void hvd_synchronize(void);

/* In place, from root to every other rank. */
void hvd_broadcast(float *buf, size_t n, int root, const char *name);
void hvd_broadcast_bytes(void *buf, size_t nbytes, int root, const char *name);

/* Concatenates every rank's n floats in rank order. Returns a malloc'd buffer of *total floats
 * (free it); counts, if not NULL, receives hvd_size() per-rank counts. */
float *hvd_allgather(const float *buf, size_t n, size_t *total, size_t *counts, const char *name);

/* hvd.start_timeline / stop_timeline: rank 0 writes the Chrome-trace of the collectives that
 * follow to path (the same as HVD_TIMELINE=path at start-up). Call on every rank. */
void hvd_start_timeline(const char *path);
void hvd_stop_timeline(void);

/* Settings in force (after hvd_init, from the environment; tests may change them). */
size_t hvd_fusion_threshold(void);
void hvd_set_fusion_threshold(size_t bytes);
int hvd_default_compression(void);
/* The stall inspector (benchmarks: every rank must switch it at the same point). */
int hvd_stall_check(void);
void hvd_set_stall_check(int on);

/* The stream (a cudaStream_t) that produces the device tensors handed to the collectives: they
 * run on it, after that work, with no device-wide synchronisation. NULL (default): their own
 * stream, after the work queued on the legacy default stream (and so every blocking stream);
 * a tensor made on another non-blocking stream needs it set here. Returns the stream set
 * before (NULL: none). The caller owns the stream: it stays in use until set again or
 * hvd_shutdown, so set it back (to NULL, or to what this returned) before destroying it.
 * hvd_distributed_optimizer's calls bind the model's stream for their own collectives only and
 * put back what was set. Without CUDA: ignored, returns NULL. */
void *hvd_set_gpu_stream(void *cuda_stream);
/* The way device tensors go in this job: "nccl", "mpi" (staged through host memory), or "none"
 * (a CPU build, or no GPU). */
const char *hvd_gpu_operations(void);

/* Diagnostics of tensor fusion since hvd_init: allreduces run (one per fused group, whatever
 * the algorithm), tensors reduced, and bytes copied through the fusion buffer (0 when every
 * group was contiguous float32: an fp16 group is always copied). */
void hvd_fusion_stats(size_t *allreduce_calls, size_t *tensors, size_t *bytes_copied);

#endif
