/* wrn_place.h — a model on the CPU or on the GPU (wrn_place.c). Internal to model/.
 * Public (to model/): wrn_place_wanted, wrn_place_conv_work, wrn_place_mark, wrn_place_oom.
 */
#ifndef HVDLAB_WRN_PLACE_H
#define HVDLAB_WRN_PLACE_H

#include <stddef.h>

#include "model/wrn_internal.h"

/* Where cfg->device puts the model named name: 1 on the GPU, 0 on the CPU; -1 and one line in
 * err when it cannot be built there (a GPU in a CPU build, a negative index, or a GPU other than
 * the current one: the layers' context serves the current device, nn/gpu_context.h). */
int wrn_place_wanted(const wrn_config *cfg, const char *name, char *err, size_t errlen);
/* GPU: the most workspace floats any of m's convolutions needs at m->max_batch (their cuDNN
 * plans are chosen now, once); 0 in a CPU build. Needs the layers' dims (wire's first pass). */
size_t wrn_place_conv_work(wrn_model *m);
/* Picks the model's layer table (wrn_ops.h) from m->gpu and m->blocked, once, and gives it and
 * the workspace size to every layer; on a GPU the bias folding (wrn_block.c). After wire. */
void wrn_place_mark(wrn_model *m);
/* The out-of-GPU-memory message in err (model, batch, bytes needed, bytes free, the cure); -1. */
int wrn_place_oom(const wrn_model *m, const char *name, size_t bytes, char *err, size_t errlen);

#endif
