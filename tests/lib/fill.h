/* fill.h — test inputs: malloc'd float arrays, uniform pseudo-random (splitmix64, reproducible
 * from the caller's state) or constant. Free with free(). */
#ifndef HVDLAB_TESTS_FILL_H
#define HVDLAB_TESTS_FILL_H

#include <stdint.h>
#include <stdlib.h>

#include "nn/layer_math.h" /* lm_splitmix64 */

/* n floats uniform in [lo, hi), drawn from *state. */
static inline float *rand_floats(uint64_t *state, size_t n, float lo, float hi)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = lo + (hi - lo) * (float)((lm_splitmix64(state) >> 40) * 0x1.0p-24);
    return x;
}

/* n copies of v. */
static inline float *const_floats(size_t n, float v)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = v;
    return x;
}

#endif
