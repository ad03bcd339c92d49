/* fusion_pack.h — the one walk that moves a fused group into its buffer and back out, for the
 * host's fusion buffer (host_backend.c), the pinned staging buffer (coll_gpu/staged.c) and the
 * device fusion buffer (coll_gpu/fusion_gpu.c).
 *
 * The group lies in the buffer back to back in queue order, as float or, for fp16 groups, as
 * IEEE half. A host tensor moves alone; device tensors that lie back to back in memory move as
 * one run (one copy or one kernel). What a move does is the caller's: each path passes its own
 * copies, the host's being fusion_host_pack and fusion_host_unpack below.
 */
#ifndef HVDLAB_FUSION_PACK_H
#define HVDLAB_FUSION_PACK_H

#include <stddef.h>

#include "coll/fusion.h"

typedef struct {
    /* one host tensor: its n floats at t, and element off of the buffer */
    void (*host)(float *t, size_t n, size_t off, void *ctx);
    void *host_ctx;
    /* a run of device tensors back to back from t, n floats in all (NULL: a host group) */
    void (*device)(float *t, size_t n, size_t off, void *ctx);
    void *device_ctx;
} fusion_mover;

/* Calls the mover for each host tensor and each device run of the len entries, in the
 * buffer's order, every one (an empty tensor too). */
void fusion_walk(const fusion_entry *e, size_t len, const fusion_mover *m);

/* A buffer in host memory, as the CPU fills and empties it. */
typedef struct {
    void *buf;
    int fp16; /* the buffer holds halves (base/half.h) */
} fusion_host_buffer;

/* The host's copies, for a mover's host (ctx: a fusion_host_buffer): the tensor into the
 * buffer at off, and back out of it. */
void fusion_host_pack(float *t, size_t n, size_t off, void *ctx);
void fusion_host_unpack(float *t, size_t n, size_t off, void *ctx);

#endif
