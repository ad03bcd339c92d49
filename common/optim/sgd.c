/* sgd.c — SGD with momentum in the Keras form the lab uses. See optim.h.
 * Public: sgd_kind, sgd_create.
 *
 * Keras SGD (tf.keras.optimizers.SGD → resource_apply_keras_momentum):
 *   v = momentum·v − lr·g;  w = w + v
 * The LR lives inside the velocity, which is why a change of LR needs momentum correction
 * (lr.h). Weight decay is not the optimizer's business here: the lab's Keras L2 regulariser
 * adds 2·wd·w to the gradient (params_add_l2), before any averaging.
 */
#include <stdlib.h>

#include "base/fatal.h"
#include "optim/lr.h"
#include "optim/optim.h"
#include "optim/optim_cuda.h"

/* state: the velocity, one per parameter */
static size_t state_floats(const param_set *ps) { return ps->n; }

static void apply(optimizer *opt, param_set *ps)
{
    /* Momentum correction for this one update when the LR moved since the last one (the
     * callbacks scale momentum before the batch and restore it after). */
    const float momentum = opt->momentum_correction
                               ? lr_corrected_momentum(opt->momentum, opt->lr, opt->last_lr)
                               : opt->momentum;
    float *restrict v = opt->state;   // (n)
    float *restrict w = ps->params;   // (n)
    const float *restrict g = ps->grads; // (n)
    const float lr = opt->lr;
    for (size_t i = 0; i < ps->n; i++) {
        v[i] = momentum * v[i] - lr * g[i];
        w[i] += v[i];
    }
}

#ifdef HVDLAB_CUDA
/* The same update as a kernel over the device buffers (optim_cuda.cu). */
static void apply_gpu(optimizer *opt, param_set *ps)
{
    const float momentum = opt->momentum_correction
                               ? lr_corrected_momentum(opt->momentum, opt->lr, opt->last_lr)
                               : opt->momentum;
    optim_sgd_cuda(opt->state, ps->params, ps->grads, ps->n, momentum, opt->lr);
}
#define APPLY_GPU apply_gpu
#else
#define APPLY_GPU NULL
#endif

const optimizer_kind sgd_kind = {.code = OPT_SGD,
                                 .name = "sgd",
                                 .state_floats = state_floats,
                                 .apply = apply,
                                 .apply_gpu = APPLY_GPU};

optimizer *sgd_create(const param_set *ps, float lr, float momentum)
{
    if (!ps)
        fatal_error("sgd_create: NULL param_set");
    if (!(momentum >= 0.0f && momentum < 1.0f))
        fatal_error("sgd_create: momentum %g must be in [0, 1)", momentum);
    return optimizer_new(&sgd_kind, ps, lr, momentum);
}
