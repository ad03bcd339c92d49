/* conv2d_dnnl.h — the convolution of conv2d.h through oneDNN (Debian's libdnnl, the CPU
 * counterpart of cuDNN), same arguments and semantics: NCHW float32, weights (Cout, Cin, k, k),
 * stride 1, padding k/2, bias; forward overwrites out; backward accumulates (+=) into din, dw,
 * db, any of which may be NULL.
 *
 * Why: im2col + OpenBLAS sgemm reaches 40-60 GFLOP/s on the 16- and 32-channel layers of the
 * narrow WRNs, oneDNN's direct AVX2 kernels 130-200 (bench/conv_micro.c). oneDNN wants its
 * activations in a channel-blocked layout (nChw8c on AVX2), so every call reorders NCHW in
 * and out — as PyTorch does — through the caller's workspace; the backward reorders add into
 * din and dw (a reorder with a "sum" post-op), which gives the += for free.
 *
 * Which path runs: conv2d.c dispatches (conv2d_backend()); this file only exists when the
 * build found oneDNN (HVDLAB_DNNL, set by the Makefile). Primitives are created on first
 * use for each shape and cached for the life of the process (conv2d_dnnl_release frees them).
 * Threads: compute_threads() (threads.h); primitives are built for a thread count, so a change
 * of count gets its own. One caller thread at a time per shape (the plans hold memory objects).
 *
 * Public: conv2d_dnnl_work_floats, conv2d_dnnl_forward, conv2d_dnnl_backward,
 *         conv2d_dnnl_backward_set, conv2d_dnnl_set_chunk, conv2d_dnnl_set_algo,
 *         conv2d_dnnl_algo, conv2d_dnnl_prefers_nchw16c, conv2d_dnnl_release.
 */
#ifndef HVDLAB_CONV2D_DNNL_H
#define HVDLAB_CONV2D_DNNL_H

#include <stddef.h>

#include "nn/conv2d.h"

/* Workspace floats for the reorders of this shape (forward and backward share it). */
size_t conv2d_dnnl_work_floats(const conv2d_dims *d);

void conv2d_dnnl_forward(float *out /* (N,Cout,H,W) */, const float *in /* (N,Cin,H,W) */,
                         const float *w /* (Cout,Cin,k,k) */, const float *b /* (Cout) or NULL */,
                         const conv2d_dims *d, float *work /* (conv2d_dnnl_work_floats) */);

void conv2d_dnnl_backward(float *din /* (N,Cin,H,W) += or NULL */,
                          float *dw /* (Cout,Cin,k,k) += or NULL */,
                          float *db /* (Cout) += or NULL */, const float *dout /* (N,Cout,H,W) */,
                          const float *in /* (N,Cin,H,W) */, const float *w /* (Cout,Cin,k,k) */,
                          const conv2d_dims *d, float *work /* (conv2d_dnnl_work_floats) */);

/* conv2d_dnnl_backward with din overwritten (=) instead of added to (conv2d_backward_set). */
void conv2d_dnnl_backward_set(float *din /* (N,Cin,H,W) = or NULL */,
                              float *dw /* (Cout,Cin,k,k) += or NULL */,
                              float *db /* (Cout) += or NULL */,
                              const float *dout /* (N,Cout,H,W) */,
                              const float *in /* (N,Cin,H,W) */,
                              const float *w /* (Cout,Cin,k,k) */, const conv2d_dims *d,
                              float *work /* (conv2d_dnnl_work_floats) */);

/* Images per primitive call (the batch goes through in pieces; see conv2d_dnnl.c). 0: chosen
 * by size (default). A fixed value is for tests and experiments (also HVDLAB_DNNL_CHUNK, read at
 * the first convolution: 1 to 4096; another value stops with one line). Call before sizing
 * workspaces: conv2d_dnnl_work_floats grows with it. */
void conv2d_dnnl_set_chunk(int images);

/* The algorithm oneDNN is asked for: "direct" or "auto" (default): Winograd F(4x4,3x3) for the
 * forward and backward-data passes of the 3x3 layers where it is faster (32+ input channels;
 * see conv2d_dnnl.c), direct elsewhere. Results then differ from direct by rounding; each
 * setting is deterministic. Also HVDLAB_CONV_ALGO=direct|auto (another name: a warning, then
 * auto). set_algo returns -1 for another name; primitives are cached per setting. */
int conv2d_dnnl_set_algo(const char *name);
const char *conv2d_dnnl_algo(void);

/* 1 when oneDNN's kernels for this shape (forward, backward data and weights; this machine,
 * thread count and algorithm setting) take and give their activations in nChw16c, so that
 * conv2d_dims.blocked = 1 saves every activation reorder (0 e.g. on AVX2, where they want
 * nChw8c; blocked still works there, through reorders). d->blocked and d->n are ignored. */
int conv2d_dnnl_prefers_nchw16c(const conv2d_dims *d);

/* bf16 convolutions (--precision bf16 on the CPU; conv2d_dnnl.c's build() says what is
 * rounded): on (1) or off (0, default) for the plans made from then on; set before the first
 * convolution. conv2d_dnnl_bf16_native: 1 when this CPU has oneDNN's native bf16 kernels
 * (AVX512_BF16 or AMX), 0 where oneDNN would only emulate them. */
void conv2d_dnnl_set_bf16(int on);
int conv2d_dnnl_bf16(void);
int conv2d_dnnl_bf16_native(void);

/* Frees every cached primitive (optional, e.g. at exit for leak checkers). */
void conv2d_dnnl_release(void);

#endif
