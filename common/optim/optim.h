/* optim.h — optimizers over a param_set (params.h), and Horovod's distributed wrapper.
 *
 *   Keras / Horovod                                  hvdlab
 *   opt = keras.optimizers.SGD(lr, momentum)      -> opt = sgd_create(ps, lr, momentum)
 *   opt = tfa.optimizers.NovoGrad(lr, ...)         -> opt = novograd_create(ps, lr, &novograd_defaults())
 *   opt = hvd.DistributedOptimizer(opt)            -> opt = hvd_distributed_optimizer(opt)
 *   model.fit(...) one batch                       -> optimizer_step(opt, ps)
 *   hvd.broadcast_variables / BroadcastGlobalVariablesCallback(0)
 *                                                  -> hvd_broadcast_parameters(ps, 0);
 *                                                     hvd_broadcast_optimizer_state(opt, 0)
 *
 * SGD (Keras form): v = momentum·v − lr·g; w += v.
 * NovoGrad (tensorflow-addons form), per named view t: v_t = ‖g_t‖² on the first step, else
 *   β2·v_t + (1−β2)·‖g_t‖²; g' = g/(√v_t + ε) (+ wd·w); g' ×= (1−β1) if grad_averaging and not the
 *   first step; then tfa's Keras momentum (resource_apply_keras_momentum): m = β1·m − lr·g';
 *   w += m. With a constant lr this is the same as "m = β1·m + g'; w −= lr·m" (m scaled by −lr);
 *   when the lr changes (warmup, schedule) the Keras form, which tfa uses, keeps the old lr in m.
 *
 * Optimizer state is one flat float buffer (state, n_state) so it can be broadcast and
 * checkpointed as a whole: SGD = velocity (n); NovoGrad = m (n) then v (one per view).
 */
#ifndef HVDLAB_OPTIM_H
#define HVDLAB_OPTIM_H

#include <stddef.h>

#include "model/params.h"

typedef enum { OPT_SGD = 0, OPT_NOVOGRAD = 1 } opt_kind;

typedef struct {
    float beta1, beta2, eps, weight_decay;
    int grad_averaging;
} novograd_options;

typedef struct optimizer {
    opt_kind kind;
    float lr;             /* set before each step (schedules write it) */
    float momentum;       /* SGD momentum (NovoGrad: beta1 lives in nov) */
    novograd_options nov;
    float *state;         /* (n_state) see above */
    size_t n_state;
    long iterations;      /* steps applied (Keras `iterations`); checkpointed */
    /* Distributed wrapper (hvd_distributed_optimizer): */
    int distributed;      /* 1: gradients averaged over ranks before the inner update */
    int compression;      /* HVD_COMPRESS_* for the gradient allreduce */
    int backward_passes_per_step; /* >= 1: accumulate this many local batches per update */
    int passes;           /* local passes accumulated so far */
    float *accum;         /* (n) local accumulation when backward_passes_per_step > 1 */
    /* Momentum correction (Horovod LR callbacks): when lr changes between steps, the SGD
     * momentum is scaled by new_lr/old_lr for that one step. */
    int momentum_correction; /* default 1 */
    float last_lr;           /* lr of the previous applied step (0 before the first) */
} optimizer;

novograd_options novograd_defaults(void); /* β1 0.9, β2 0.999, ε 1e-7, wd 0, averaging off */

optimizer *sgd_create(const param_set *ps, float lr, float momentum);
optimizer *novograd_create(const param_set *ps, float lr, const novograd_options *o);
void optimizer_free(optimizer *opt);
/* For the create functions: a zeroed optimizer of kind with a zeroed state buffer of n_state
 * floats, one backward pass per step, no compression, momentum correction on; NULL when out of
 * memory. */
optimizer *optimizer_new(opt_kind kind, float lr, float momentum, size_t n_state);
const char *optimizer_name(const optimizer *opt); /* "sgd" / "novograd" */

/* Horovod's DistributedOptimizer: returns opt, now averaging gradients over all ranks (one fused
 * allreduce over the flat gradient buffer) before each inner update. */
optimizer *hvd_distributed_optimizer(optimizer *opt);
optimizer *hvd_distributed_optimizer_ex(optimizer *opt, int compression,
                                        int backward_passes_per_step);

/* One update of ps->params from ps->grads (averaged first when distributed). With
 * backward_passes_per_step = k > 1, only every k-th call updates; the others accumulate.
 * Returns 1 if the weights changed, 0 if this call only accumulated. */
int optimizer_step(optimizer *opt, param_set *ps);

/* The inner updates alone, from ps->grads as they are (no averaging, no accumulation, no
 * momentum correction, no trace; opt->iterations is read, not advanced). optimizer_step calls
 * them; momentum is the SGD momentum to use for this one update. */
void sgd_apply(optimizer *opt, param_set *ps, float momentum);
void novograd_apply(optimizer *opt, param_set *ps);

/* What DistributedOptimizer does before each update: averages ps->grads over all ranks, one
 * named allreduce per view ("DistributedOptimizer.grads/<view>"), queued and then fused by the
 * runtime (one ring pass per HVD_FUSION_THRESHOLD bucket). compression: HVD_COMPRESS_*. */
void hvd_allreduce_gradients(param_set *ps, int compression);

/* From root to every rank: trainable params and the non-trainable state (BN statistics). */
void hvd_broadcast_parameters(param_set *ps, int root);
/* From root: optimizer state buffer, iteration count and last_lr. */
void hvd_broadcast_optimizer_state(optimizer *opt, int root);

#endif
