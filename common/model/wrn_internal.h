/* wrn_internal.h — the wrn_model struct, shared by wrn_build.c (parsing, layout, weights,
 * buffers) and wrn.c (forward and backward). Not for use outside the model.
 */
#ifndef HVDLAB_WRN_INTERNAL_H
#define HVDLAB_WRN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "model/params.h"
#include "model/wrn.h"
#include "model/wrn_block.h"
#include "nn/dense.h"

#define WRN_IMG 28 /* input (B, 1, 28, 28) */
#define WRN_STEM 16

struct wrn_model {
    wrn_config cfg;
    size_t max_batch;
    uint64_t seed;
    param_set ps;

    wrn_conv stem_conv;    /* 1 -> 16, 3x3 */
    wrn_bn stem_bn;
    float *stem_c;         /* (B,16,28,28) stem conv output */
    float *stem_r;         /* (B,16,28,28) relu(bn) */

    int per_group;         /* blocks per group, (D-4)/6 */
    int nblocks;           /* 3·per_group, group g's blocks at [g·per_group, (g+1)·per_group) */
    wrn_block *blocks;     /* (nblocks) */
    float **block_out;     /* (nblocks) each (B, Cout, H, W) */
    float *pool[2];        /* after groups 1 and 2: (B,16K,14,14), (B,32K,7,7) */
    float *feat;           /* (B, 64K) global average pool */
    float *logits, *probs; /* (B, 10) */
    float *fc_w, *fc_b, *fc_dw, *fc_db; /* (10, 64K), (10) */
    dense_dims fc;

    float *g[4];           /* gradient scratch, each max_batch · the largest activation */
    float *dfeat;          /* (B, 64K) */
    float *dlogits;        /* (B, 10) */
    float *work;           /* conv workspace (largest conv2d_work_floats) */

    float *arena;          /* every buffer above that is not a parameter: one allocation */

    int gpu;               /* 1: everything above lives on the GPU (params.device too) */
    const wrn_ops *ops;    /* the layers the model runs (wrn_ops.h), as each layer's ops */
    int blocked;           /* 1: CPU activations in nChw16c (wrn_activation_layout, wrn.h) */
    int nhwc;              /* 1: GPU activations in NHWC (the same) */
    size_t work_floats;    /* floats at work */
    struct wrn_input *input; /* GPU: the batch's way up (wrn_gpu.h) */
};

/* 1: this CPU model keeps its activations in nChw16c (wrn_layout.c; reads
 * HVDLAB_ACTIVATION_LAYOUT). Needs cfg, per_group and nblocks. */
int wrn_layout_blocked(const wrn_model *m);
/* 1: this GPU model keeps its activations in NHWC (wrn_layout.c; reads the same variable). */
int wrn_layout_nhwc(void);

#endif
