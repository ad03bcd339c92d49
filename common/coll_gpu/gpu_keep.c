/* gpu_keep.c — grow-only buffers of the collectives, the outgrown freed at shutdown. See
 * gpu_keep.h.
 * Public: gpu_keep_grown, gpu_keep, gpu_keep_device, gpu_keep_release. */
#ifdef HVDLAB_CUDA

#include "coll_gpu/gpu_keep.h"

#include <stdlib.h>

#include "base/cuda_check.h"
#include "base/fatal.h"
#include "base/memory.h"

typedef struct kept {
    void *buf;
    gpu_keep_kind kind;
    struct kept *next;
} kept;

static kept *kept_list;

size_t gpu_keep_grown(size_t have, size_t need)
{
    return have <= need / 2 ? need : 2 * have;
}

void gpu_keep(void *buf, gpu_keep_kind kind)
{
    if (!buf)
        return;
    kept *k = malloc(sizeof *k);
    if (!k)
        fatal_error("GPU collectives: out of host memory keeping an outgrown buffer");
    *k = (kept){buf, kind, kept_list};
    kept_list = k;
}

void *gpu_keep_device(void **buf, size_t *bytes, size_t need)
{
    if (*buf && *bytes >= need)
        return *buf;
    size_t grown = gpu_keep_grown(*bytes, need ? need : 1);
    gpu_keep(*buf, GPU_KEEP_DEVICE);
    *buf = NULL;
    *bytes = 0;
    CUDA_CHECK(cudaMalloc(buf, grown));
    *bytes = grown;
    return *buf;
}

void gpu_keep_release(void)
{
    while (kept_list) {
        kept *k = kept_list;
        kept_list = k->next;
        if (k->kind == GPU_KEEP_DEVICE) {
            cudaFree(k->buf);
        } else if (k->kind == GPU_KEEP_PINNED) {
            cudaFreeHost(k->buf);
        } else {
            cudaHostUnregister(k->buf);
            memory_free(k->buf);
        }
        free(k);
    }
}

#endif
