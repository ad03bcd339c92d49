/* fusion.h — tensor fusion: queued allreduces reduced together in as few allreduces as fit.
 *
 * Consecutive queued tensors with the same op and compression form a group while the group's
 * bytes stay within the fusion threshold (a tensor larger than the threshold goes alone;
 * threshold 0 puts every tensor alone). A group whose tensors sit back to back in memory (the
 * flat gradient buffer of the model) is reduced where it is; any other group is copied into the
 * fusion buffer, reduced once, and copied back. fp16 groups are always converted into a half
 * buffer for the wire and back.
 * Each group goes to the first row of hvd_init's table of ways (backend.h) that takes it: device
 * tensors (CUDA build) to the GPU's rows (coll_gpu/), host tensors to the host's
 * (host_backend.c: in place or through the fusion buffer, then allreduce.c's algorithm).
 */
#ifndef HVDLAB_FUSION_H
#define HVDLAB_FUSION_H

#include <mpi.h>
#include <stddef.h>

#include "base/reduce_op.h"
#include "coll/ring.h"

/* A tensor's name, as the collective check's descriptor holds it (COLL_NAME_MAX, checked equal
 * in hvd.c). */
#define FUSION_NAME_MAX 64

typedef struct {
    float *buf; /* (n,) the caller's tensor, reduced in place */
    size_t n;
    hvd_op op;
    int fp16;
    int gpu; /* FUSION_HOST (0): host memory; else a device tensor, its way tagged by hvd/ */
    char name[FUSION_NAME_MAX];
} fusion_entry;

enum { FUSION_HOST = 0 }; /* the device ways' tags: coll_gpu/fusion_gpu.h */

typedef struct {
    size_t allreduce_calls; /* allreduces run, one per group (ring, shm, cma, hier, NCCL) */
    size_t tensors;         /* tensors reduced */
    size_t bytes_copied;    /* bytes moved through the fusion buffer, in and out */
} fusion_stats;

typedef struct coll_backend coll_backend; /* backend.h */

/* The queue of one job's allreduces (hvd.c owns it, in its state). */
typedef struct {
    fusion_entry *entries;
    size_t len, cap;
    const coll_backend *const *backends; /* hvd_init's table of ways (backend.h) */
    size_t nbackends;
    ring_workspace ws;
    fusion_stats stats;
} fusion_queue;

void fusion_enqueue(fusion_queue *q, float *buf, size_t n, hvd_op op, int fp16, int gpu,
                    const char *name);
/* Collective over comm: every rank must have queued the same tensors in the same order. When
 * enter is not NULL it is called first, in the same order on every rank (the collective check
 * and the stall inspector's handshake): with (NULL, queued) when not exactly one tensor is
 * queued, then with each queued tensor (e, 0). */
void fusion_flush(fusion_queue *q, MPI_Comm comm, size_t threshold,
                  void (*enter)(const fusion_entry *e, size_t queued));
/* Frees the queue and its workspace (the rows free their own buffers: backend.h). */
void fusion_free(fusion_queue *q);

/* What a group is (fusion_group.c). Number of entries, starting at entries[0], that form the
 * next group. */
size_t fusion_group_len(const fusion_entry *e, size_t n, size_t threshold);
/* 1 when the len tensors sit back to back in memory. */
int fusion_contiguous(const fusion_entry *e, size_t len);
/* Entries from e[0] (at most len) that are device tensors lying back to back: one copy or one
 * kernel moves them all. */
size_t fusion_device_run(const fusion_entry *e, size_t len);
/* Timeline begin ('B') or end ('E') of activity for each tensor of the group. */
void fusion_mark(const fusion_entry *e, size_t len, const char *activity, char phase);

#endif
