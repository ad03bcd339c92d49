/* sgd.c — SGD with momentum in the Keras form the lab uses. See optim.h.
 * Public: sgd_create, sgd_apply.
 *
 * Keras SGD (tf.keras.optimizers.SGD → resource_apply_keras_momentum):
 *   v = momentum·v − lr·g;  w = w + v
 * The LR lives inside the velocity, which is why a change of LR needs momentum correction
 * (lr.h). Weight decay is not the optimizer's business here: the lab's Keras L2 regulariser
 * adds 2·wd·w to the gradient (params_add_l2), before any averaging.
 */
#include <stdlib.h>

#include "base/fatal.h"
#include "optim/optim.h"

optimizer *sgd_create(const param_set *ps, float lr, float momentum)
{
    if (!ps)
        fatal_error("sgd_create: NULL param_set");
    if (!(momentum >= 0.0f && momentum < 1.0f))
        fatal_error("sgd_create: momentum %g must be in [0, 1)", momentum);
    /* state: the velocity, one per parameter */
    return optimizer_new(OPT_SGD, lr, momentum, ps->n);
}

void sgd_apply(optimizer *opt, param_set *ps, float momentum)
{
    float *restrict v = opt->state;   // (n)
    float *restrict w = ps->params;   // (n)
    const float *restrict g = ps->grads; // (n)
    const float lr = opt->lr;
    for (size_t i = 0; i < ps->n; i++) {
        v[i] = momentum * v[i] - lr * g[i];
        w[i] += v[i];
    }
}
