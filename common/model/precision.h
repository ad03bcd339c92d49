/* precision.h — the number format a model trains in: --precision fp32|bf16|fp16.
 *
 * fp32 is the default. bf16 and fp16 are mixed precision: the convolutions multiply 16-bit
 * numbers and add in fp32; the weights' master copy, the optimizer state and batch-norm
 * statistics stay fp32, and fp16 takes dynamic loss scaling (optim/loss_scale.h). The checkpoint
 * holds fp32 whatever the precision, so a run may resume in another one.
 *
 * What each build trains in (precision_check says why not, in one line):
 *   CPU build  fp32; bf16 where oneDNN has native bf16 kernels (AVX512_BF16 or AMX) and the
 *              convolutions are oneDNN's: the convolutions' inputs, weights and incoming
 *              gradients rounded to bf16, everything else fp32 (nn/conv2d_dnnl.c, build());
 *              not fp16 (Debian's oneDNN 2.6 has no CPU fp16 convolutions)
 *   CUDA build fp32 only: its cuDNN bf16/fp16 convolutions and 16-bit kernels are not built yet
 *
 * Public: precision_parse, precision_name, precision_check, precision_apply.
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

/* Makes this process's layers train in p from now on (p as precision_check accepted it; before
 * the first convolution). args_parse calls it for --precision. */
void precision_apply(precision p);

#endif
