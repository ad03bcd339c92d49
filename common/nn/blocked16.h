/* blocked16.h — the WRN's element-wise layers on activations in oneDNN's nChw16c layout, the
 * layout its AVX-512 convolutions read and write (conv2d_dims.blocked), so that the model's
 * activations need no reorder between layers.
 *
 * nChw16c: a tensor (N, C, H, W) with C a multiple of 16 stored as (N, C/16, H, W, 16): the 16
 * channels of a block are the fastest index. Element (n, c, h, w) is at
 *   ((n·C/16 + c/16)·H·W + h·W + w)·16 + c%16.
 * The same number of floats as NCHW, images outermost as in NCHW.
 *
 * Every function has the arguments and semantics of its NCHW namesake without the suffix
 * (bn.h, pool.h), C a multiple of 16: the same per-element float operations, so max-pool, GAP
 * and the apply step of batch norm give the same bits as NCHW given the same statistics; the
 * statistics (channel sums) are added in another order, so they differ from NCHW by rounding.
 * The dropout mask stays keyed by the flat NCHW index (act.h), so a blocked run drops exactly
 * the elements an NCHW run (and the GPU) drops. Per-channel parameters, statistics and GAP's
 * (N, C) output are plain arrays as in NCHW.
 *
 * nchw16c_from_nchw / nchw_from_nchw16c convert (tests, and any caller at the edge).
 *
 * Files: bn_c16.c (batch norm), pool_c16.c (max-pool, GAP), blocked16.c (the conversions).
 *
 * Public: bn_relu_forward_train_c16, bn_relu_forward_infer_c16, bn_relu_backward_c16,
 *         maxpool2_forward_c16, maxpool2_backward_c16, gap_forward_c16, gap_backward_c16,
 *         nchw16c_from_nchw, nchw_from_nchw16c.
 */
#ifndef HVDLAB_BLOCKED16_H
#define HVDLAB_BLOCKED16_H

#include <stdint.h>

#include "nn/bn.h"
#include "nn/pool.h"

#define BLOCK16 16

void bn_relu_forward_train_c16(float *out, const float *in, const float *add, float p,
                               uint64_t key, const float *gamma, const float *beta, float *mean,
                               float *invstd, float *run_mean, float *run_var, const bn_dims *d);
void bn_relu_forward_infer_c16(float *out, const float *in, const float *add,
                               const float *gamma, const float *beta, const float *run_mean,
                               const float *run_var, const bn_dims *d);
void bn_relu_backward_c16(float *din, float *dgamma, float *dbeta, const float *dout,
                          const float *in, const float *out, float p, const float *gamma,
                          const float *beta, const float *mean, const float *invstd,
                          const bn_dims *d);

void maxpool2_forward_c16(float *out, const float *in, const pool_dims *d);
void maxpool2_backward_c16(float *din, const float *dout, const float *in, const float *out,
                           const pool_dims *d);
void gap_forward_c16(float *out /* (N,C) plain */, const float *in, const pool_dims *d);
void gap_backward_c16(float *din, const float *dout /* (N,C) plain */, const pool_dims *d);

/* (N, C, HW) NCHW <-> nChw16c, C a multiple of 16; dst and src must not overlap. */
void nchw16c_from_nchw(float *dst, const float *src, int n, int c, int hw);
void nchw_from_nchw16c(float *dst, const float *src, int n, int c, int hw);

#endif
