/* wrn_place.c — where a model lives: the CPU, or the GPU its config names (wrn_device, wrn.h;
 * the step programs put hvd_pin_device's choice there, train/args.h): the layer table every
 * layer of the model calls (wrn_ops.h), chosen here once; for a GPU model cuDNN's workspace at
 * the largest batch and the message when the GPU is too small. Building itself is in
 * wrn_build.c, which calls these.
 * Public (to model/): wrn_place_wanted, wrn_place_conv_work, wrn_place_mark, wrn_place_oom.
 */
#include "model/wrn_place.h"

#include "base/env_switch.h"
#include "base/errmsg.h"
#include "nn/gpu_context.h" /* declares nothing in a CPU build */

int wrn_place_wanted(const wrn_config *cfg, const char *name, char *err, size_t errlen)
{
    const wrn_device d = cfg->device;
    if (!d.on_gpu)
        return 0;
    if (d.gpu < 0)
        return errmsg_set(err, errlen, "wrn_create", "'%s': GPU %d is not a device index", name,
                          d.gpu);
#ifdef HVDLAB_CUDA
    const int current = gpu_context_device();
    if (d.gpu != current)
        return errmsg_set(err, errlen, "wrn_create", "'%s' on GPU %d: GPU %d is the current "
                          "device (hvd_pin_device makes the rank's GPU current)", name, d.gpu,
                          current);
    return 1;
#else
    return errmsg_set(err, errlen, "wrn_create", "'%s' on GPU %d: this build has no CUDA "
                      "(make CUDA=1)", name, d.gpu);
#endif
}

/* Every convolution of the model, in order; c->d as wire() set it. */
static int nconvs(const wrn_model *m) { return 1 + 3 * m->nblocks; }

static wrn_conv *conv_at(wrn_model *m, int i)
{
    if (i == 0)
        return &m->stem_conv;
    wrn_block *blk = &m->blocks[(i - 1) / 3];
    switch ((i - 1) % 3) {
    case 0:
        return &blk->conv1;
    case 1:
        return &blk->conv2;
    default:
        return blk->has_short ? &blk->shortcut : NULL;
    }
}

size_t wrn_place_conv_work(wrn_model *m)
{
    size_t most = 0;
#ifdef HVDLAB_CUDA
    for (int i = 0; i < nconvs(m); i++) {
        wrn_conv *c = conv_at(m, i);
        if (!c)
            continue;
        conv2d_dims d = c->d;
        d.n = (int)m->max_batch; /* chooses and caches the plan for the training batch now */
        const size_t w = conv2d_cudnn_work_floats(&d);
        most = w > most ? w : most;
    }
#else
    (void)m;
#endif
    return most;
}

/* The convolution's bias goes into the batch norm after it (wrn_block.c, "Bias folding"). */
static void fold_bias(wrn_conv *c, wrn_bn *bn)
{
    c->bias_in_bn = 1;
    bn->pre = c->b;
    bn->dpre = c->db;
}

void wrn_place_mark(wrn_model *m)
{
    m->ops = m->gpu ? WRN_OPS_GPU : m->blocked ? &WRN_OPS_CPU_BLOCKED : &WRN_OPS_CPU;
    for (int i = 0; i < nconvs(m); i++) {
        wrn_conv *c = conv_at(m, i);
        if (c) {
            c->ops = m->ops;
            c->work_floats = m->work_floats;
        }
    }
    m->stem_bn.ops = m->ops;
    for (int b = 0; b < m->nblocks; b++) {
        m->blocks[b].ops = m->ops;
        m->blocks[b].bn1.ops = m->ops;
        m->blocks[b].bn2.ops = m->ops;
    }
    /* on by default: without it an NHWC step ran 0.53-0.82x as fast on an H200 (2026-11-27,
     * bench-train-gpu against tools/gpu_session.sh's switches stage; wrn_layout.c) */
    if (m->gpu && env_switch_on(SWITCH_BIAS_IN_BN)) {
        fold_bias(&m->stem_conv, &m->stem_bn);
        for (int b = 0; b < m->nblocks; b++) {
            fold_bias(&m->blocks[b].conv1, &m->blocks[b].bn1);
            fold_bias(&m->blocks[b].conv2, &m->blocks[b].bn2);
        }
    }
}

static double gib(size_t bytes) { return (double)bytes / (1024.0 * 1024.0 * 1024.0); }

int wrn_place_oom(const wrn_model *m, const char *name, size_t bytes, char *err, size_t errlen)
{
    size_t free_bytes = 0;
#ifdef HVDLAB_CUDA
    free_bytes = params_cuda_free_bytes();
#endif
    return errmsg_set(err, errlen, "wrn_create",
                      "'%s' at batch %zu: out of GPU memory: the model needs %.2f GiB (%zu "
                      "bytes: weights, gradients, statistics, activations, workspace, input) "
                      "and GPU %d has %.2f GiB free; try a smaller --batch-size",
                      name, m->max_batch, gib(bytes), bytes, m->cfg.device.gpu, gib(free_bytes));
}
