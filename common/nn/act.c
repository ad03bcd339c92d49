/* act.c — ReLU and inverted dropout, CPU. See act.h.
 * Public: relu_forward, relu_backward, dropout_key, dropout_forward, dropout_backward. */
#include "nn/act.h"

#include <string.h>

#include "nn/layer_math.h"

void relu_forward(float *out, const float *in, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = lm_relu(in[i]);
}

void relu_backward(float *din, const float *dout, const float *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        din[i] += lm_relu_grad(dout[i], out[i]);
}

uint64_t dropout_key(uint64_t seed, uint64_t step, uint32_t layer)
{
    return lm_mix64(lm_mix64(seed ^ 0x44524f504f5554ull /* "DROPOUT" */) ^
                    lm_mix64(step * 0x100000001b3ull + layer));
}

void dropout_forward(float *out, const float *in, size_t n, float p, uint64_t key, int train)
{
    if (!train || p == 0.0f) {
        if (out != in)
            memmove(out, in, n * sizeof *out);
        return;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = in[i] * lm_dropout_scale(key, i, p);
}

void dropout_backward(float *din, const float *dout, size_t n, float p, uint64_t key)
{
    if (p == 0.0f) {
        for (size_t i = 0; i < n; i++)
            din[i] += dout[i];
        return;
    }
    for (size_t i = 0; i < n; i++)
        din[i] += dout[i] * lm_dropout_scale(key, i, p);
}
