/* wrn.h — WideResNet-D-K (keras-contrib form) on 28x28x1 inputs, forward and backward on the CPU,
 * or on a GPU in a CUDA build: the one its config names (wrn_device; wrn_place.h).
 *
 * Network (NCHW float32): stem conv3x3(16)-BN-ReLU; three groups of (D-4)/6 blocks at widths
 * 16K, 32K, 64K; each block conv3x3-BN-ReLU-dropout-conv3x3-BN-ReLU added to the block input
 * (a 1x1 conv on the shortcut when the width changes); 2x2 max-pool after groups 1 and 2;
 * global average pool; dense to 10; softmax cross-entropy. Convs keep their biases. BN: training
 * uses batch statistics and updates running = 0.9·running + 0.1·batch (Keras momentum 0.9),
 * eps 1e-5; inference uses the running statistics.
 *
 * Parameters and gradients: one flat buffer each, described by wrn_params() (params.h).
 */
#ifndef HVDLAB_WRN_H
#define HVDLAB_WRN_H

#include <stddef.h>
#include <stdint.h>

#include "model/params.h"

#define WRN_CLASSES 10
#define WRN_NAME_LEN 32

/* Where wrn_create builds a model. All zero, as in a config written {0} or {16, 1, 0.01f}, is
 * the CPU: never GPU 0. The step programs take it from hvd_pin_device's choice (args_defaults,
 * train/args.h); the model itself never asks where the rank was pinned. */
typedef struct {
    int on_gpu; /* 1: on CUDA device gpu, which must be the current one (hvd_pin_device makes
                   the rank's GPU current); a CPU build refuses it */
    int gpu;    /* the device's index when on_gpu; 0 otherwise */
} wrn_device;

typedef struct {
    int depth;         /* D: (D-4) % 6 == 0, D >= 10 */
    int width;         /* K >= 1 */
    float dropout;     /* block dropout rate, 0 <= p < 1 (lab: 0.01) */
    wrn_device device; /* where the model is built (zero: the CPU) */
} wrn_config;

/* The device for a GPU index as hvd_pinned_gpu gives it: gpu >= 0 that GPU, -1 the CPU. */
wrn_device wrn_device_of(int gpu);
/* "wrn-16-4" -> {16, 4}; keeps cfg->dropout and cfg->device. -1 and one line in err on a bad
 * name. */
int wrn_config_parse(const char *name, wrn_config *cfg, char *err, size_t errlen);
/* "wrn-16-4" */
void wrn_config_name(const wrn_config *cfg, char *buf, size_t len);

typedef struct wrn_model wrn_model;

/* The largest batch wrn_create builds for (2^20 images; the flags --batch-size and
 * --val-batch-size are checked against it, train/args.c). */
#define WRN_MAX_BATCH (1u << 20)

/* Builds the model on cfg->device for batches of up to max_batch images; all work buffers are
 * allocated here, once. Weights: conv kernels he_normal, dense kernel glorot_uniform, biases 0,
 * BN gamma 1 beta 0, running mean 0 var 1 (Keras defaults); drawn from seed (which also seeds
 * dropout).
 * NULL and one line in err on failure. */
wrn_model *wrn_create(const wrn_config *cfg, size_t max_batch, uint64_t seed, char *err,
                      size_t errlen);
void wrn_free(wrn_model *m);

param_set *wrn_params(wrn_model *m);
const wrn_config *wrn_get_config(const wrn_model *m);
size_t wrn_param_count(const wrn_model *m); /* trainable parameters (Keras "Trainable params") */

typedef struct {
    double loss;    /* mean softmax cross-entropy over the batch (+ the L2 term in training) */
    int correct;    /* argmax(logits) == label */
    size_t count;   /* images in the batch */
} wrn_result;

/* "nchw", "nChw16c" or "nhwc": the layout of the model's activations (a CPU model on oneDNN's
 * AVX-512 kernels keeps them blocked; a GPU model NHWC unless asked for NCHW;
 * HVDLAB_ACTIVATION_LAYOUT, wrn_layout.c). Results are the same up to float rounding;
 * parameters, gradients and checkpoints are the same layout either way. */
const char *wrn_activation_layout(const wrn_model *m);

/* Training mode: zeroes grads, forward with batch statistics and dropout, loss, backward into
 * grads (mean over the batch), plus Keras L2 (wd·Σw² on conv/dense kernels) when wd > 0.
 * x (B, 1, 28, 28), y (B), B <= max_batch. */
wrn_result wrn_train_batch(wrn_model *m, const float *x, const int *y, size_t B, float wd);

/* Inference mode: running statistics, no dropout, no gradients. logits (B, 10) may be NULL. */
wrn_result wrn_eval_batch(wrn_model *m, const float *x, const int *y, size_t B, float *logits);

#endif
