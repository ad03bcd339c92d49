/* precision.c — the names of the number formats, what this build trains in, and the switch.
 * See precision.h.
 * Public: precision_parse, precision_name, precision_check, precision_apply.
 */
#include "model/precision.h"

#include <stdio.h>
#include <string.h>

#include "nn/conv2d.h"
#include "nn/conv2d_dnnl.h"

static const char *const NAMES[] = {"fp32", "bf16", "fp16"};

int precision_parse(const char *name, precision *p, char *err, size_t errlen)
{
    for (int i = 0; i < (int)(sizeof NAMES / sizeof NAMES[0]); i++)
        if (!strcmp(name, NAMES[i])) {
            *p = (precision)i;
            return 0;
        }
    snprintf(err, errlen, "'%s' is not fp32, bf16 or fp16", name);
    return -1;
}

const char *precision_name(precision p)
{
    return (unsigned)p < sizeof NAMES / sizeof NAMES[0] ? NAMES[p] : "?";
}

int precision_check(precision p, char *err, size_t errlen)
{
    if (p == PRECISION_FP32)
        return 0;
#ifdef HVDLAB_CUDA
    snprintf(err, errlen, "%s: this build trains in fp32 only (the CUDA build's cuDNN %s "
             "convolutions and 16-bit kernels are not built yet); leave --precision out",
             precision_name(p), precision_name(p));
#elif defined(HVDLAB_DNNL)
    if (p == PRECISION_BF16) {
        if (strcmp(conv2d_backend(), "dnnl") != 0)
            snprintf(err, errlen, "bf16: the CPU build's bf16 is oneDNN's convolutions, and "
                     "HVDLAB_CONV=%s chose another backend; leave --precision out or unset "
                     "HVDLAB_CONV", conv2d_backend());
        else if (!conv2d_dnnl_bf16_native())
            snprintf(err, errlen, "bf16: this CPU has neither AVX512_BF16 nor AMX, where oneDNN "
                     "would only emulate bf16 convolutions; leave --precision out");
        else
            return 0;
        return -1;
    }
    snprintf(err, errlen, "fp16: the CPU build trains in fp32 and bf16 only (Debian's oneDNN 2.6 "
             "has no fp16 convolutions on the CPU); leave --precision out");
#else
    snprintf(err, errlen, "%s: this build has no oneDNN (libdnnl-dev), whose bf16 convolutions "
             "the CPU build uses, so it trains in fp32 only; leave --precision out",
             precision_name(p));
#endif
    return -1;
}

void precision_apply(precision p)
{
#if defined(HVDLAB_DNNL) && !defined(HVDLAB_CUDA)
    conv2d_dnnl_set_bf16(p == PRECISION_BF16);
#else
    (void)p;
#endif
}
