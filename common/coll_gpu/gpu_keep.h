/* gpu_keep.h — the collectives' device and pinned buffers: they only grow, and the ones
 * outgrown are freed at shutdown.
 *
 * cudaFree, cudaFreeHost and cudaHostUnregister wait for the whole device with no limit: work
 * stuck on any stream (a NCCL kernel whose peer died) would hold a collective that frees for
 * ever, past gpu_wait's bounds. So no collective frees: a buffer outgrown is kept here until
 * gpu_ops_shutdown calls gpu_keep_release, and each growth at least doubles the buffer, so the
 * ones kept are fewer than 64 and hold fewer bytes than the one in use. CUDA builds only.
 */
#ifndef HVDLAB_GPU_KEEP_H
#define HVDLAB_GPU_KEEP_H

#include <stddef.h>

typedef enum {
    GPU_KEEP_DEVICE,     /* cudaMalloc's */
    GPU_KEEP_PINNED,     /* cudaMallocHost's */
    GPU_KEEP_REGISTERED, /* memory_alloc's, pinned by cudaHostRegister */
} gpu_keep_kind;

/* The size to grow a buffer of have bytes to, for need bytes (more than have): at least
 * twice have. */
size_t gpu_keep_grown(size_t have, size_t need);
/* buf (NULL: nothing) is freed, as its kind says, by gpu_keep_release. */
void gpu_keep(void *buf, gpu_keep_kind kind);
/* *buf, a device block of *bytes (NULL and 0 at first), holds at least need bytes: else it is
 * kept and replaced by one of gpu_keep_grown bytes. Returns *buf. */
void *gpu_keep_device(void **buf, size_t *bytes, size_t need);
/* Frees what was kept (at shutdown, when no collective runs). */
void gpu_keep_release(void);

#endif
