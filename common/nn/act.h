/* act.h — ReLU and inverted dropout, elementwise over flat float arrays.
 *
 * Dropout is counter-based: the mask of element i is a pure function of (key, i) (layer_math.h),
 * so backward regenerates it instead of storing it, and a GPU kernel would draw the same mask.
 * dropout_key gives every (seed, training step, layer) its own key.
 *
 * Public: relu_forward, relu_backward, dropout_key, dropout_forward, dropout_backward; with
 *         HVDLAB_CUDA their twins relu_forward_cuda, relu_backward_cuda, dropout_forward_cuda,
 *         dropout_backward_cuda.
 */
#ifndef HVDLAB_ACT_H
#define HVDLAB_ACT_H

#include <stddef.h>
#include <stdint.h>

/* out = max(in, 0); out may equal in. */
void relu_forward(float *out /* (n) */, const float *in /* (n) */, size_t n);
/* din += dout where out > 0 (out: the ReLU's output; din must not alias dout). */
void relu_backward(float *din /* (n) += */, const float *dout /* (n) */, const float *out /* (n) */,
                   size_t n);

uint64_t dropout_key(uint64_t seed, uint64_t step, uint32_t layer);

/* train = 1: out = in · mask, mask_i = 0 with probability p else 1/(1-p) (inverted dropout);
 * train = 0 or p = 0: out = in. out may equal in. 0 <= p < 1. */
void dropout_forward(float *out /* (n) */, const float *in /* (n) */, size_t n, float p,
                     uint64_t key, int train);
/* din += dout · mask, the same mask as dropout_forward(train = 1) with this key. */
void dropout_backward(float *din /* (n) += */, const float *dout /* (n) */, size_t n, float p,
                      uint64_t key);

#ifdef HVDLAB_CUDA
/* CUDA twins (act_cuda.cu): the same arguments as device pointers, enqueued on the stream of
 * nn/gpu_context.h. They run the same float operations (layer_math.h), so they give the same
 * bits as the CPU functions, dropout masks included. */
void relu_forward_cuda(float *out, const float *in, size_t n);
void relu_backward_cuda(float *din, const float *dout, const float *out, size_t n);
/* out and in: the same buffer or disjoint; a partial overlap (which act.c's memmove and
 * in-order loop would allow) stops the process. */
void dropout_forward_cuda(float *out, const float *in, size_t n, float p, uint64_t key,
                          int train);
void dropout_backward_cuda(float *din, const float *dout, size_t n, float p, uint64_t key);
#endif

#endif
