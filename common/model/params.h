/* params.h — a model's trainable parameters as one flat buffer, with a table of named views.
 *
 * All trainable parameters live in one contiguous float buffer `params` and their gradients in
 * another, `grads`, of the same length and layout. Each layer's tensors are views into them
 * (name, offset, shape). Broadcast, allreduce, checkpoints and optimizers work on the flat
 * buffers, so tensor fusion falls out for free: averaging every gradient is one call on `grads`.
 *
 * Non-trainable state (batch-norm running mean and variance) lives in a second pair, `state` /
 * `state_views`: it is not touched by optimizers but is broadcast and checkpointed.
 *
 * On a GPU model (its config's device a GPU, wrn.h) params, grads and state are
 * device pointers and `device` is 1; the views and counts stay on the host. Code that reads the
 * numbers on the host goes through params_to_host / params_checksum_at.
 *
 * Public: the structs below, params_checksum, params_find, params_add_l2, params_checksum_at,
 *         params_digest_at, params_to_host, params_from_host, params_buffer_alloc,
 *         params_buffer_free, params_device_stream, params_device_wait.
 */
#ifndef HVDLAB_PARAMS_H
#define HVDLAB_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#define PARAM_NAME_LEN 64
#define PARAM_MAX_DIMS 4

typedef struct {
    char name[PARAM_NAME_LEN]; /* e.g. "g1.b0.conv1.w", "stem.bn.gamma", "fc.b" */
    size_t offset;             /* in floats, into params/grads (or into state for state views) */
    size_t count;              /* product of shape */
    int ndim;
    int shape[PARAM_MAX_DIMS]; /* PyTorch order: conv (Cout, Cin, kh, kw), dense (out, in) */
    int decay;                 /* 1: L2 weight decay applies (conv and dense kernels, not biases/BN) */
} param_view;

typedef struct {
    float *params;            /* (n) trainable parameters, memory_alloc'd */
    float *grads;             /* (n) their gradients, same layout */
    size_t n;
    param_view *views;        /* (nviews) in model order */
    int nviews;
    float *state;             /* (n_state) non-trainable: batch-norm running mean/var */
    size_t n_state;
    param_view *state_views;  /* (n_state_views) */
    int n_state_views;
    int device;               /* 1: params, grads, state are device memory (the model's GPU) */
    uint64_t steps;           /* training batches run (keys dropout); like PyTorch's
                                 num_batches_tracked it is checkpointed and broadcast with the
                                 parameters, so a resumed run draws the masks it would have */
} param_set;

/* 64-bit FNV-1a of the bytes: equal on two ranks iff the buffers are bitwise equal (w.h.p.). */
uint64_t params_checksum(const float *buf, size_t n);

/* The view called name, or NULL. */
const param_view *params_find(const param_view *views, int nviews, const char *name);

/* Keras L2 regulariser on every view with decay = 1: adds 2·wd·w to grads and returns
 * wd·Σw² (the term Keras adds to the loss; no ½). wd = 0 returns 0 and changes nothing. */
double params_add_l2(param_set *ps, float wd);

/* Buffers that may be device memory (device = 1: on the GPU of nn/gpu_context.h; a CPU build
 * stops the process if asked for one). The copies return when done. */
uint64_t params_checksum_at(const float *buf, size_t n, int device);
/* Two numbers a grader can average across ranks (the trace's grad_dot, grad_norm): dot = Σ w_i·b_i
 * with fixed pseudo-random weights w_i in [-1, 1) (linear, so the dot of a mean of buffers is the
 * mean of their dots), norm = sqrt(Σ b_i²) (the scale to compare dots at). */
void params_digest_at(const float *buf, size_t n, int device, double *dot, double *norm);
void params_to_host(float *dst_host, const float *src, size_t n, int device);
void params_from_host(float *dst, const float *src_host, size_t n, int device);
/* n zeroed floats (at least one); NULL when out of (device) memory. */
float *params_buffer_alloc(size_t n, int device);
void params_buffer_free(float *p, int device);
/* The model's CUDA stream (a cudaStream_t), for the collectives and the optimizers' kernels;
 * NULL in a CPU build. */
void *params_device_stream(void);
/* Waits until the work enqueued on that stream has run, as one of the host's waits that
 * gpu_context_waited counts (nn/gpu_context.h); nothing in a CPU build. */
void params_device_wait(void);

#ifdef HVDLAB_CUDA
/* params_cuda.cu: the device side of the functions above. */
double params_add_l2_cuda(param_set *ps, float wd);
float *params_cuda_try_alloc(size_t bytes); /* NULL, not a stop, when the GPU is full */
size_t params_cuda_free_bytes(void);         /* cudaMemGetInfo's free memory */
void *params_cuda_stream(void);
/* The context's scratch (nn/gpu_context.h): at least bytes of device memory for a kernel's small
 * results on the model's stream, valid until the next call, freed with the context. */
void *params_cuda_scratch(size_t bytes);
#endif
#endif
