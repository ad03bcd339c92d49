/* optim.h — optimizers over a param_set (params.h), and Horovod's distributed wrapper.
 *
 *   Keras / Horovod                                  hvdlab
 *   opt = keras.optimizers.SGD(lr, momentum)      -> opt = sgd_create(ps, lr, momentum)
 *   opt = tfa.optimizers.NovoGrad(lr, ...)         -> nov = novograd_defaults();
 *                                                     opt = novograd_create(ps, lr, &nov)
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
 *
 * A third optimizer is one file that defines its optimizer_kind (and a create function) plus
 * one row in optim_kinds.c; the flags, checkpoints, trace and broadcasts take its name from there.
 *
 * Public: sgd.c sgd_kind, sgd_create; novograd.c novograd_kind, novograd_defaults,
 * novograd_create; optim_kinds.c optimizer_kind_named, optimizer_kind_of, optimizer_kind_names;
 * optim.c optimizer_new, optimizer_step, optimizer_free, optimizer_name; diverge.c
 * optimizer_check_finite, optimizer_check_loss; distributed.c
 * hvd_distributed_optimizer(_ex), hvd_allreduce_gradients, hvd_broadcast_parameters,
 * hvd_broadcast_optimizer_state.
 */
#ifndef HVDLAB_OPTIM_H
#define HVDLAB_OPTIM_H

#include <stddef.h>

#include "model/params.h"

/* The codes the lab programs and checkpoints use for the two built-in kinds (the i32 stored at
 * offset 72 of a checkpoint, ckpt/ckpt_format.h); every other fact about a kind is in its
 * optimizer_kind. */
typedef enum { OPT_SGD = 0, OPT_NOVOGRAD = 1 } opt_kind;

typedef struct optimizer optimizer;

/* One kind of optimizer: what optimizer_step, the flags, checkpoints, the trace and the
 * broadcasts need to know about it. Each kind's file defines one (sgd.c: sgd_kind); the table of
 * all of them, for lookups by name or code, is optim_kinds.c. */
typedef struct optimizer_kind {
    int code;             /* opt_kind value; stored in checkpoints and broadcast headers */
    const char *name;     /* "sgd": --optimizer, the trace's opt=, messages */
    /* floats of state for ps (the flat buffer broadcast and checkpointed whole) */
    size_t (*state_floats)(const param_set *ps);
    /* the inner update from ps->grads as they are (averaged and accumulated already); reads
     * opt->iterations (steps applied before this one), does not advance it; any momentum
     * correction is the kind's own (SGD has it, NovoGrad not) */
    void (*apply)(optimizer *opt, param_set *ps);
    /* the same update on a GPU model's device buffers (ps->device); NULL: the kind has none
     * (or this is a CPU build) and a GPU model cannot use it */
    void (*apply_gpu)(optimizer *opt, param_set *ps);
} optimizer_kind;

extern const optimizer_kind sgd_kind;      /* sgd.c */
extern const optimizer_kind novograd_kind; /* novograd.c */

/* The table (optim_kinds.c). By name: NULL and "'NAME' is not sgd or novograd" in err (err may
 * be NULL). By code: NULL when no kind has it. */
const optimizer_kind *optimizer_kind_named(const char *name, char *err, size_t errlen);
const optimizer_kind *optimizer_kind_of(int code);
/* The kinds' names joined by sep, the last two by last ("sgd or novograd", "sgd|novograd");
 * cut to len. */
void optimizer_kind_names(char *buf, size_t len, const char *sep, const char *last);

typedef struct {
    float beta1, beta2, eps, weight_decay;
    int grad_averaging;
} novograd_options;

struct optimizer {
    const optimizer_kind *kind;
    float lr;             /* set before each step (schedules write it) */
    float momentum;       /* SGD momentum (NovoGrad: beta1 lives in nov) */
    novograd_options nov;
    float *state;         /* (n_state) see above */
    size_t n_state;
    long iterations;      /* steps applied (Keras `iterations`); checkpointed */
    /* Distributed wrapper (hvd_distributed_optimizer): */
    int distributed;      /* 1: gradients averaged over ranks before the inner update */
    int compression;      /* HVD_COMPRESS_* for the gradient allreduce */
    /* What the wrapper does to ps->grads before the inner update (hvd_allreduce_gradients);
     * NULL: nothing. A pointer so that the step need not know about the wrapper. */
    void (*reduce_grads)(param_set *ps, int compression);
    int backward_passes_per_step; /* >= 1: accumulate this many local batches per update */
    int passes;           /* local passes accumulated so far */
    float *accum;         /* (n) local accumulation when backward_passes_per_step > 1 */
    /* Momentum correction (Horovod LR callbacks): when lr changes between steps, the SGD
     * momentum is scaled by new_lr/old_lr for that one step. */
    int momentum_correction; /* default 1 */
    float last_lr;           /* lr of the previous applied step (0 before the first) */
    /* GPU model: state and accum are device memory, as the param_set's buffers */
    int device;
    void *device_aux;        /* the kind's own device scratch (NovoGrad: tables, partial sums) */
    void *host_aux;          /* what it copies up each step (NovoGrad: the tables), kept alive */
    /* fp16 training (loss_scale.h): the gradients come multiplied by loss_scale->scale; the
     * step divides them by it after the averaging and skips the update, on every rank alike,
     * when any rank's hold NaN or Inf. NULL: no scaling (the caller owns it). */
    struct loss_scale *loss_scale;
};

novograd_options novograd_defaults(void); /* β1 0.9, β2 0.999, ε 1e-7, wd 0, averaging off */

optimizer *sgd_create(const param_set *ps, float lr, float momentum);
optimizer *novograd_create(const param_set *ps, float lr, const novograd_options *o);
void optimizer_free(optimizer *opt);
/* For the create functions: a zeroed optimizer of kind with a zeroed state buffer of
 * kind->state_floats(ps) floats, one backward pass per step, no compression, momentum
 * correction on; NULL when out of memory. */
optimizer *optimizer_new(const optimizer_kind *kind, const param_set *ps, float lr,
                         float momentum);
const char *optimizer_name(const optimizer *opt); /* its kind's name; "none" for NULL */

/* Horovod's DistributedOptimizer: returns opt, now averaging gradients over all ranks (one
 * allreduce per view, fused: hvd_allreduce_gradients) before each inner update. */
optimizer *hvd_distributed_optimizer(optimizer *opt);
optimizer *hvd_distributed_optimizer_ex(optimizer *opt, int compression,
                                        int backward_passes_per_step);

/* One update of ps->params from ps->grads (averaged first when distributed). With
 * backward_passes_per_step = k > 1, only every k-th call updates; the others accumulate.
 * Returns 1 if the weights changed, 0 if this call only accumulated or, with opt->loss_scale,
 * skipped the update for an overflow (weights, state and iterations unchanged). */
int optimizer_step(optimizer *opt, param_set *ps);

/* Stops the run (fatal_error on this rank) when ps->grads holds a NaN or Inf: one line naming
 * the epoch and step (from lr_lab_position, lr.h), the LR in use and the likely cure (a warmup,
 * a smaller --base-lr). optimizer_step calls it after the averaging, before the update. */
void optimizer_check_finite(const optimizer *opt, const param_set *ps);

/* The same stop for a loss that is NaN or Inf where no gradient follows to be checked: the
 * evaluation after the last update (lab_evaluate calls it). */
void optimizer_check_loss(double loss);

/* What DistributedOptimizer does before each update: averages ps->grads over all ranks, one
 * named allreduce per view ("DistributedOptimizer.grads/<view>"), queued and then fused by the
 * runtime (one allreduce per HVD_FUSION_THRESHOLD bucket). compression: HVD_COMPRESS_*. */
void hvd_allreduce_gradients(param_set *ps, int compression);

/* From root to every rank: trainable params and the non-trainable state (BN statistics). */
void hvd_broadcast_parameters(param_set *ps, int root);
/* From root: optimizer state buffer, iteration count and last_lr. */
void hvd_broadcast_optimizer_state(optimizer *opt, int root);

#endif
