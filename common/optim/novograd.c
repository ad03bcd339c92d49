/* novograd.c — NovoGrad, tensorflow-addons form: the optimizer the lab's step 10 switches to.
 * Public: novograd_kind, novograd_defaults, novograd_create.
 *
 * Sources: tensorflow-addons, tensorflow_addons/optimizers/novograd.py
 * (NovoGrad._resource_apply_dense); Ginsburg et al., "Stochastic Gradient Methods with
 * Layer-wise Adaptive Moments for Training of Deep Networks", arXiv:1905.11286.
 *
 * Per tensor t (one named view of the param_set) with gradient g and weights w:
 *   first step (iterations == 0):  v_t = ‖g‖²
 *   later:                         v_t = β2·v_t + (1−β2)·‖g‖²
 *   g' = g / (√v_t + ε)            (ε outside the square root, as tfa; OpenSeq2Seq puts it in)
 *   if wd > 0:  g' += wd·w         (after the normalisation, on every tensor, biases included)
 *   if grad_averaging and not the first step:  g' ×= (1 − β1)
 *   m = β1·m − lr·g';  w += m      (tfa calls Keras's momentum kernel, lr folded into m)
 * Defaults (tfa): lr 1e-3, β1 0.9, β2 0.999, ε 1e-7, wd 0, grad_averaging off.
 * tfa has no `momentum` attribute, so Horovod's LR callbacks never apply momentum correction
 * to it; neither does this kind's update.
 *
 * State: m (n) then v (one float per view); a param_set without views is one tensor.
 */
#include <math.h>
#include <stdlib.h>

#include "base/fatal.h"
#include "optim/optim.h"
#include "optim/optim_cuda.h"

novograd_options novograd_defaults(void)
{
    return (novograd_options){.beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-7f, .weight_decay = 0.0f,
                              .grad_averaging = 0};
}

static int ntensors(const param_set *ps) { return ps->nviews > 0 ? ps->nviews : 1; }

/* state: m, one per parameter, then v, one per view */
static size_t state_floats(const param_set *ps) { return ps->n + (size_t)ntensors(ps); }

optimizer *novograd_create(const param_set *ps, float lr, const novograd_options *o)
{
    if (!ps)
        fatal_error("novograd_create: NULL param_set");
    novograd_options d = o ? *o : novograd_defaults();
    if (!(d.beta1 >= 0.0f && d.beta1 < 1.0f))
        fatal_error("novograd_create: beta1 %g must be in [0, 1)", d.beta1);
    if (!(d.beta2 >= 0.0f && d.beta2 < 1.0f))
        fatal_error("novograd_create: beta2 %g must be in [0, 1)", d.beta2);
    if (!(d.eps >= 0.0f))
        fatal_error("novograd_create: epsilon %g must be >= 0", d.eps);
    if (!(d.weight_decay >= 0.0f)) /* tfa: "Weight decay rate cannot be negative" */
        fatal_error("novograd_create: weight decay %g must be >= 0", d.weight_decay);
    for (int t = 0; t < ps->nviews; t++)
        if (ps->views[t].offset + ps->views[t].count > ps->n)
            fatal_error("novograd_create: view \"%s\" ends at %zu, past the %zu parameters",
                        ps->views[t].name, ps->views[t].offset + ps->views[t].count, ps->n);
    /* momentum is informational (the update reads nov.beta1) */
    optimizer *opt = optimizer_new(&novograd_kind, ps, lr, d.beta1);
    if (opt)
        opt->nov = d;
    return opt;
}

/* One tensor: count elements at offset, second moment in *v. */
static void update_tensor(const optimizer *opt, float *restrict w, const float *restrict g,
                          float *restrict m, size_t count, float *v, int first)
{
    const novograd_options *o = &opt->nov;
    double ss = 0.0; /* ‖g‖² accumulated in double: a 10^6-element layer loses nothing */
    for (size_t i = 0; i < count; i++)
        ss += (double)g[i] * (double)g[i];
    float g2 = (float)ss;
    float vt = first ? g2 : o->beta2 * *v + (1.0f - o->beta2) * g2;
    *v = vt;
    const float denom = sqrtf(vt) + o->eps;
    const float wd = o->weight_decay, b1 = o->beta1, lr = opt->lr;
    const float avg = (o->grad_averaging && !first) ? 1.0f - b1 : 1.0f;
    for (size_t i = 0; i < count; i++) {
        float gp = g[i] / denom;
        if (wd > 0.0f)
            gp += wd * w[i];
        gp *= avg;
        m[i] = b1 * m[i] - lr * gp;
        w[i] += m[i];
    }
}

static void apply(optimizer *opt, param_set *ps)
{
    float *m = opt->state, *v = opt->state + ps->n;
    int first = opt->iterations == 0; /* tfa: tf.equal(self.iterations, 0) */
    if (ps->nviews == 0) {
        update_tensor(opt, ps->params, ps->grads, m, ps->n, v, first);
        return;
    }
    for (int t = 0; t < ps->nviews; t++) {
        const param_view *pv = &ps->views[t];
        update_tensor(opt, ps->params + pv->offset, ps->grads + pv->offset, m + pv->offset,
                      pv->count, v + t, first);
    }
}

#ifdef HVDLAB_CUDA
/* The same update on the device (optim_cuda.cu): the per-view ‖g‖² by a reduction, then one
 * elementwise kernel over every view. */
static void apply_gpu(optimizer *opt, param_set *ps)
{
    const int T = ntensors(ps);
    /* The tables stay for the optimizer's life: a copy from pageable memory "might be
     * synchronous" (CUDA), no more, so the source must outlive the call that queued it. */
    size_t *tab = opt->host_aux;
    if (!tab) {
        tab = opt->host_aux = malloc(2 * (size_t)T * sizeof *tab);
        if (!tab)
            fatal_error("novograd: out of memory for %d views", T);
        for (int t = 0; t < T; t++) {
            tab[t] = ps->nviews ? ps->views[t].offset : 0;
            tab[T + t] = ps->nviews ? ps->views[t].count : ps->n;
        }
    }
    if (!opt->device_aux) {
        const size_t bytes = optim_novograd_aux_bytes(T);
        opt->device_aux = params_buffer_alloc((bytes + sizeof(float) - 1) / sizeof(float), 1);
        if (!opt->device_aux)
            fatal_error("novograd: out of GPU memory for %zu bytes of scratch", bytes);
    }
    const novograd_options *o = &opt->nov;
    const int first = opt->iterations == 0;
    const float avg = (o->grad_averaging && !first) ? 1.0f - o->beta1 : 1.0f;
    optim_novograd_cuda(ps->params, ps->grads, opt->state, opt->state + ps->n, tab, tab + T, T,
                        opt->device_aux, o->beta1, o->beta2, o->eps, o->weight_decay, avg, opt->lr,
                        first);
}
#define APPLY_GPU apply_gpu
#else
#define APPLY_GPU NULL
#endif

const optimizer_kind novograd_kind = {.code = OPT_NOVOGRAD,
                                      .name = "novograd",
                                      .state_floats = state_floats,
                                      .apply = apply,
                                      .apply_gpu = APPLY_GPU};
