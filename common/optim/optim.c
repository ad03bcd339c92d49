/* optim.c — what every optimizer shares: optimizer_step (local accumulation, the distributed
 * wrapper's averaging, the inner update of the optimizer's kind, the trace event), free and
 * name. It calls the kind and the wrapper through pointers, so it depends on neither. See optim.h.
 * Public: optimizer_new, optimizer_step, optimizer_free, optimizer_name.
 */
#include <stdlib.h>
#include <string.h>

#include "base/fatal.h"
#include "base/trace.h"
#include "hvd/hvd.h"
#include "optim/loss_scale.h"
#include "optim/optim.h"
#include "optim/optim_cuda.h"

optimizer *optimizer_new(const optimizer_kind *kind, const param_set *ps, float lr,
                         float momentum)
{
    optimizer *opt = calloc(1, sizeof *opt);
    if (!opt)
        return NULL;
    opt->kind = kind;
    opt->lr = lr;
    opt->momentum = momentum;
    opt->n_state = kind->state_floats(ps);
    opt->device = ps->device;
    if (ps->device && !kind->apply_gpu)
        fatal_error("%s has no GPU update: build it for the CPU (HVDLAB_DEVICE=cpu)", kind->name);
    if (ps->device) /* beside the model's buffers, zeroed */
        opt->state = params_buffer_alloc(opt->n_state, 1);
    else
        opt->state = memory_alloc(opt->n_state * sizeof(float)); /* zeroed; broadcast and saved whole */
    if (!opt->state) {
        free(opt);
        return NULL;
    }
    opt->backward_passes_per_step = 1;
    opt->compression = HVD_COMPRESS_NONE;
    opt->momentum_correction = 1;
    return opt;
}

void optimizer_free(optimizer *opt)
{
    if (!opt)
        return;
    if (opt->device) {
        params_buffer_free(opt->state, 1);
        params_buffer_free(opt->accum, 1);
        params_buffer_free(opt->device_aux, 1);
    } else {
        memory_free(opt->state);
        memory_free(opt->accum);
    }
    free(opt->host_aux);
    free(opt);
}

const char *optimizer_name(const optimizer *opt)
{
    return opt ? opt->kind->name : "none";
}

/* The state buffer was sized for one param_set; a different one is a programming error that
 * would otherwise write past the buffers. */
static void check_shape(const optimizer *opt, const param_set *ps)
{
    size_t want = opt->kind->state_floats(ps);
    if (opt->n_state != want)
        fatal_error("optimizer_step: %s state holds %zu floats, this param_set needs %zu "
                    "(%zu parameters, %d views): was the optimizer created for another model?",
                    optimizer_name(opt), opt->n_state, want, ps->n, ps->nviews);
}

/* backward_passes_per_step = k > 1: the gradients of k local passes are summed (Horovod's
 * default average_aggregated_gradients=False: a sum, not divided by k) and only the k-th call
 * hands the sum on, in ps->grads. Returns 1 when it is time to update. */
static int accumulate(optimizer *opt, param_set *ps)
{
    if (opt->backward_passes_per_step <= 1)
        return 1;
    if (!opt->accum) {
        opt->accum = opt->device ? params_buffer_alloc(ps->n, 1)
                                 : memory_alloc((ps->n ? ps->n : 1) * sizeof(float)); /* zeroed */
        if (!opt->accum)
            fatal_error("optimizer_step: out of memory for a %zu-float gradient accumulator",
                        ps->n);
    }
#ifdef HVDLAB_CUDA
    if (opt->device) {
        const int last = ++opt->passes >= opt->backward_passes_per_step;
        optim_accumulate_cuda(opt->accum, ps->grads, ps->n, last);
        if (!last)
            return 0;
        opt->passes = 0;
        return 1;
    }
#endif
    float *restrict a = opt->accum;       // (n)
    const float *restrict g = ps->grads;  // (n)
    for (size_t i = 0; i < ps->n; i++)
        a[i] += g[i];
    if (++opt->passes < opt->backward_passes_per_step)
        return 0;
    memcpy(ps->grads, a, ps->n * sizeof(float));
    memset(a, 0, ps->n * sizeof(float));
    opt->passes = 0;
    return 1;
}

/* The loss scaler's verdict on the averaged gradients: divided by S, then 1 (apply) unless any
 * rank's hold NaN or Inf (0: skip, on every rank alike). */
static int unscaled_and_finite(optimizer *opt, param_set *ps)
{
    size_t bad;
#ifdef HVDLAB_CUDA
    if (ps->device) {
        size_t first;
        optim_scale_cuda(ps->grads, ps->n, 1.0f / opt->loss_scale->scale);
        bad = optim_non_finite_cuda(ps->grads, ps->n, &first);
    } else
#endif
        bad = loss_scale_unscale(opt->loss_scale, ps->grads, ps->n);
    return loss_scale_update(opt->loss_scale, bad > 0);
}

int optimizer_step(optimizer *opt, param_set *ps)
{
    if (!opt || !ps)
        fatal_error("optimizer_step: NULL %s", opt ? "param_set" : "optimizer");
    check_shape(opt, ps);
    if (!accumulate(opt, ps))
        return 0;
    if (opt->reduce_grads)
        opt->reduce_grads(ps, opt->compression);
    if (opt->loss_scale && !unscaled_and_finite(opt, ps))
        return 0;
    /* After the averaging the gradient is the same on every rank, so every rank stops at this
     * same step and none waits in the next allreduce. A NaN or Inf loss on any one rank shows
     * here too: its logits were not finite, so were its softmax and every gradient it fed into
     * the average. */
    optimizer_check_finite(opt, ps);
    if (ps->device)
        opt->kind->apply_gpu(opt, ps);
    else
        opt->kind->apply(opt, ps);
    opt->iterations++;
    opt->last_lr = opt->lr;
    if (trace_enabled()) {
        double dot, norm;
        params_digest_at(ps->grads, ps->n, ps->device, &dot, &norm);
        trace_event("step", "opt=%s lr=%.9g distributed=%d iter=%ld grad_sum=%016llx "
                    "param_sum=%016llx grad_dot=%.17g grad_norm=%.17g",
                    optimizer_name(opt), (double)opt->lr, opt->distributed, opt->iterations,
                    (unsigned long long)params_checksum_at(ps->grads, ps->n, ps->device),
                    (unsigned long long)params_checksum_at(ps->params, ps->n, ps->device), dot,
                    norm);
    }
    return 1;
}
