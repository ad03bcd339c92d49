/* xent.c — softmax cross-entropy from logits and accuracy. See xent.h.
 * Public: xent_forward, xent_backward, xent_correct. */
#include "nn/xent.h"

#include <math.h>
#include <stddef.h>

#include "base/fatal.h"
#include "nn/layer_math.h"

double xent_forward(float *probs, const float *logits, const int *labels, int n, int k)
{
    double total = 0.0;
    for (int i = 0; i < n; i++) {
        const float *z = logits + (size_t)i * k;
        float *p = probs + (size_t)i * k;
        if (labels[i] < 0 || labels[i] >= k)
            fatal_error("xent_forward: label %d of row %d is outside 0..%d", labels[i], i, k - 1);
        const double lse = lm_softmax_row(p, z, k);
        total += lse - z[labels[i]];
    }
    return n > 0 ? total / n : 0.0;
}

void xent_backward(float *dlogits, const float *probs, const int *labels, int n, int k,
                   float scale)
{
    const float s = scale / (float)n;
    for (int i = 0; i < n; i++) {
        const float *p = probs + (size_t)i * k;
        float *g = dlogits + (size_t)i * k;
        for (int j = 0; j < k; j++)
            g[j] += s * (p[j] - (j == labels[i] ? 1.0f : 0.0f));
    }
}

int xent_correct(const float *logits, const int *labels, int n, int k)
{
    int correct = 0;
    for (int i = 0; i < n; i++) {
        const float *z = logits + (size_t)i * k;
        int best = 0;
        for (int j = 1; j < k; j++)
            if (z[j] > z[best])
                best = j;
        correct += best == labels[i];
    }
    return correct;
}
