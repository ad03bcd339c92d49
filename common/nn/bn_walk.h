/* bn_walk.h — how the GPU batch norm (bn_cuda.cu) reaches a channel's elements, as
 * HVD_HOST_DEVICE helpers, so that a CPU unit test (tests/unit/test_bn_walk.c) checks the very
 * indexing the kernels run: that every element of a channel is visited once, whatever the shape
 * and the number of parts.
 *
 * A channel's M = N·HW elements are numbered j = n·HW + hw. A thread visits j, j + BN_WALK_STEP,
 * j + 2·BN_WALK_STEP, … (BN_WALK_STEP is the kernels' block size); bn_walk turns that sequence
 * into NCHW offsets with no division per element: the step is split once into whole images and a
 * remainder of positions.
 *
 * Split (the default; HVDLAB_BN_SPLIT=0: one block per channel): a channel is cut into P
 * parts, part p holding j in [p·M/P, (p+1)·M/P), one block each; bn_split_parts picks P from
 * the shape alone.
 *
 * Batches (HVDLAB_BN_BATCH=1): bn_walk_take hands a thread its next few offsets at once, in the
 * same order, so that a kernel can issue all their loads before it uses any.
 *
 * Public: bn_walk_init, bn_walk_next, bn_walk_take, bn_split_parts, bn_split_range.
 */
#ifndef HVDLAB_BN_WALK_H
#define HVDLAB_BN_WALK_H

#include <stddef.h>

#include "base/half.h" /* HVD_HOST_DEVICE */

#define BN_WALK_STEP 512
#define BN_WALK_BATCH_MAX 8 /* bn_walk_take's max, at most */
#define BN_SPLIT_PART_MIN (4 * BN_WALK_STEP) /* elements per part, at least: 4 per thread */
#define BN_SPLIT_BLOCKS 2048                 /* C·P at most */
#define BN_SPLIT_MAX_PARTS 64

typedef struct {
    size_t idx, hw;         /* offset of the current element, its position in the image */
    size_t step, wrap, end; /* offset step, extra offset when hw wraps, N·C·HW */
    size_t dhw, HW;
} bn_walk;

/* Channel c's element j = start of an (N, C, HW) tensor; CHW = C·HW. */
static inline HVD_HOST_DEVICE void bn_walk_init(bn_walk *w, int c, size_t start, size_t HW,
                                                size_t CHW, size_t N)
{
    w->HW = HW;
    const size_t n0 = start / HW, dn = BN_WALK_STEP / HW;
    w->hw = start - n0 * HW;
    w->idx = n0 * CHW + (size_t)c * HW + w->hw;
    w->dhw = BN_WALK_STEP - dn * HW;
    w->step = dn * CHW + w->dhw;
    w->wrap = CHW - HW;
    w->end = N * CHW; /* idx < end while n < N, as c·HW + hw < CHW */
}

/* On to element j + BN_WALK_STEP. */
static inline HVD_HOST_DEVICE void bn_walk_next(bn_walk *w)
{
    w->idx += w->step;
    w->hw += w->dhw;
    if (w->hw >= w->HW) {
        w->hw -= w->HW;
        w->idx += w->wrap;
    }
}

/* Up to max (<= BN_WALK_BATCH_MAX) of the thread's next elements, while *j < j1: their offsets
 * go to idx[0..k), the walk and *j move past them (j steps by BN_WALK_STEP, as the walk). Returns
 * k, 0 when the thread has no element left. The offsets are bn_walk_next's, in its order. */
static inline HVD_HOST_DEVICE int bn_walk_take(bn_walk *w, size_t *j, size_t j1, size_t *idx,
                                               int max)
{
    int k = 0;
    for (; k < max && *j < j1; k++) {
        idx[k] = w->idx;
        bn_walk_next(w);
        *j += BN_WALK_STEP;
    }
    return k;
}

/* Parts per channel for M = N·HW elements and C channels; 1: one block per channel. */
static inline HVD_HOST_DEVICE int bn_split_parts(size_t M, int C)
{
    size_t p = M / BN_SPLIT_PART_MIN;
    const size_t cap = BN_SPLIT_BLOCKS / (size_t)C;
    if (p > cap)
        p = cap;
    if (p > BN_SPLIT_MAX_PARTS)
        p = BN_SPLIT_MAX_PARTS;
    return p < 2 ? 1 : (int)p;
}

/* Part p of P holds the channel's elements j in [*j0, *j1). */
static inline HVD_HOST_DEVICE void bn_split_range(size_t M, int P, int p, size_t *j0, size_t *j1)
{
    *j0 = M * (size_t)p / (size_t)P;
    *j1 = M * (size_t)(p + 1) / (size_t)P;
}

#endif
