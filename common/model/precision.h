/* precision.h — the number format a model trains in: --precision fp32|bf16|fp16.
 *
 * fp32 is the default and the only one any build trains in yet. bf16 and fp16 are mixed
 * precision: activations and convolutions in the 16-bit format, fp32 master weights, optimizer
 * state and batch-norm statistics, fp16 with dynamic loss scaling (optim/loss_scale.h). The
 * checkpoint holds fp32 whatever the precision, so a run may resume in another one.
 *
 * precision_check says, in one line, why this build does not train in p:
 *   CPU build  oneDNN's bf16 convolutions run on this kind of CPU (AVX512_BF16, AMX; see
 *              bench/conv_micro --dtype bf16), but batch norm, the activations and the pools
 *              have no bf16 path, so the CPU build refuses bf16 and fp16
 *   CUDA build the cuDNN bf16/fp16 convolutions and the 16-bit kernels are not built yet
 *
 * Public: precision_parse, precision_name, precision_check.
 */
#ifndef HVDLAB_PRECISION_H
#define HVDLAB_PRECISION_H

#include <stddef.h>

typedef enum { PRECISION_FP32 = 0, PRECISION_BF16 = 1, PRECISION_FP16 = 2 } precision;

/* "fp32", "bf16" or "fp16" into *p: 0; otherwise -1 and "'NAME' is not fp32, bf16 or fp16" in
 * err. */
int precision_parse(const char *name, precision *p, char *err, size_t errlen);
const char *precision_name(precision p); /* "fp32", "bf16", "fp16" */

/* 0 when this build trains in p; otherwise -1 and one line in err saying why, without the
 * flag's name (the caller prefixes it). */
int precision_check(precision p, char *err, size_t errlen);

#endif
