/* precision.c — the names of the number formats and what this build trains in. See precision.h.
 * Public: precision_parse, precision_name, precision_check.
 */
#include "nn/precision.h"

#include <stdio.h>
#include <string.h>

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
#else
    snprintf(err, errlen, "%s: the CPU build trains in fp32 only (its batch norm, activations "
             "and pools have no 16-bit path); leave --precision out", precision_name(p));
#endif
    return -1;
}
