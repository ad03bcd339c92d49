/* wrn.c — WideResNet forward and backward for one batch (training and inference).
 * Public: wrn_train_batch, wrn_eval_batch (wrn.h). Construction is in wrn_build.c.
 *
 * Forward: stem conv-BN-ReLU, the blocks of group 1, max-pool, group 2, max-pool, group 3,
 * global average pool, dense, softmax cross-entropy. Every activation lives in the model's arena
 * (allocated once in wrn_create for max_batch), so a batch allocates nothing.
 * Backward walks the same path in reverse with four gradient scratch buffers g[0..3] of the
 * largest activation size: the gradient of the current tensor in one, the gradient of the
 * previous tensor accumulated into another, the block's two temporaries in the other two.
 *
 * Activations are NCHW, or nChw16c on a blocked CPU model (m->blocked, wrn_build.c): the stem
 * conv then reads the NCHW image and writes nChw16c, every layer after it keeps that layout,
 * and GAP's (B, 64K) output is plain again for the dense layer. On an NHWC GPU model (m->nhwc)
 * the same: the one-channel image is the same bytes in NCHW and NHWC, and GAP's output is
 * (B, 64K) in both.
 *
 * Each layer is called once, through the model's layer table (m->ops, wrn_ops.h; the blocks'
 * layers through their own, wrn_block.c), chosen when the model was built: the CPU's NCHW or
 * nChw16c layers, or the CUDA/cuDNN twins. On a GPU model the same code runs with every tensor
 * on the device, the batch goes up through the table's batch_in (wrn_gpu.h's
 * wrn_input_upload), and only the loss and the correct count come back (the loss and accuracy
 * wait for the forward; backward is left queued on the stream, so the caller's next work on the
 * host, loading the next batch, overlaps it).
 */
#include "base/fatal.h"
#include "base/threads.h"
#include "base/trace.h"
#include "model/wrn_internal.h"
#include "nn/act.h"
#include "nn/layer_prof.h"

static float *block_input(wrn_model *m, int b)
{
    if (b == 0)
        return m->stem_r;
    if (b % m->per_group == 0)
        return m->pool[b / m->per_group - 1];
    return m->block_out[b - 1];
}

static pool_dims group_dims(const wrn_model *m, int g, int B)
{
    const wrn_block *last = &m->blocks[(g + 1) * m->per_group - 1];
    return (pool_dims){.n = B, .c = last->cout, .h = last->h, .w = last->w, .nhwc = m->nhwc};
}

static uint64_t block_key(const wrn_model *m, int b)
{
    return dropout_key(m->seed, m->ps.steps, (uint32_t)b);
}

/* p[0..n) = 0 where the model lives. */
static void zero(const wrn_model *m, float *p, size_t n) { LPROF("zero", m->ops->zero(p, n)); }

/* Logits for x (B, 1, 28, 28) in m->logits. */
static void forward(wrn_model *m, const float *x, int B, int train)
{
    wrn_conv_forward(&m->stem_conv, m->stem_c, x, B, m->work);
    wrn_bn_relu_forward(&m->stem_bn, m->stem_r, m->stem_c, NULL, B, train, 0.0f, 0);
    for (int b = 0; b < m->nblocks; b++) {
        wrn_block_forward(&m->blocks[b], m->block_out[b], block_input(m, b), B, train,
                          block_key(m, b), m->work);
        const int g = b / m->per_group;
        if (b % m->per_group == m->per_group - 1 && g < 2) {
            const pool_dims pd = group_dims(m, g, B);
            LPROF("maxpool fwd", m->ops->maxpool_forward(m->pool[g], m->block_out[b], &pd));
        }
    }
    const pool_dims gd = group_dims(m, 2, B);
    LPROF("avgpool fwd", m->ops->gap_forward(m->feat, m->block_out[m->nblocks - 1], &gd));
    m->fc.n = B;
    LPROF("dense fwd", m->ops->dense_forward(m->logits, m->feat, m->fc_w, m->fc_b, &m->fc));
}

/* Gradients of the mean loss into m->ps.grads (after forward(train = 1) and xent_forward). */
static void backward(wrn_model *m, const float *x, const int *y, int B)
{
    const int c3 = m->fc.in;
    zero(m, m->dlogits, (size_t)B * WRN_CLASSES);
    m->ops->xent_backward(m->dlogits, m->probs, y, B, WRN_CLASSES, 1.0f);
    zero(m, m->dfeat, (size_t)B * c3);
    LPROF("dense bwd", m->ops->dense_backward(m->dfeat, m->fc_dw, m->fc_db, m->dlogits, m->feat,
                                              m->fc_w, &m->fc));

    /* cur: gradient of the tensor being walked back through; nxt: the one before it. */
    int cur = 0, nxt = 1;
    const pool_dims gd = group_dims(m, 2, B);
    zero(m, m->g[cur], (size_t)B * c3 * gd.h * gd.w);
    LPROF("avgpool bwd", m->ops->gap_backward(m->g[cur], m->dfeat, &gd));
    for (int b = m->nblocks - 1; b >= 0; b--) {
        wrn_block *blk = &m->blocks[b];
        const float *in = block_input(m, b);
        wrn_block_backward(blk, m->g[nxt], m->g[cur], in, B, block_key(m, b), m->g[2], m->g[3],
                           m->work);
        cur = nxt;
        nxt = 1 - nxt;
        if (b > 0 && b % m->per_group == 0) { /* in is a pool output: back through the pool */
            const int g = b / m->per_group - 1;
            const pool_dims pd = group_dims(m, g, B);
            zero(m, m->g[nxt], (size_t)B * pd.c * pd.h * pd.w);
            LPROF("maxpool bwd", m->ops->maxpool_backward(m->g[nxt], m->g[cur],
                                                          m->block_out[b - 1], m->pool[g], &pd));
            cur = nxt;
            nxt = 1 - nxt;
        }
    }
    /* stem: (relu -> bn) -> conv (no gradient for the input image) */
    wrn_bn_relu_backward(&m->stem_bn, m->g[nxt], m->g[cur], m->stem_c, m->stem_r, 0.0f, B);
    wrn_conv_backward(&m->stem_conv, NULL, m->g[nxt], x, B, m->work);
}

static void check_batch(const wrn_model *m, size_t B, const char *fn)
{
    if (B > m->max_batch)
        fatal_error("%s: batch of %zu images is larger than the model's max_batch %zu", fn, B,
                    m->max_batch);
}

/* The mean cross-entropy of m->logits against y (probabilities kept for backward). */
static double loss_of(wrn_model *m, const int *y, int B)
{
    return m->ops->xent_forward(m->probs, m->logits, y, B, WRN_CLASSES);
}

static int correct_of(wrn_model *m, const int *y, int B)
{
    return m->ops->xent_correct(m->logits, y, B, WRN_CLASSES);
}


wrn_result wrn_train_batch(wrn_model *m, const float *x, const int *y, size_t B, float wd)
{
    wrn_result r = {0.0, 0, B};
    check_batch(m, B, "wrn_train_batch");
    zero(m, m->ps.grads, m->ps.n);
    if (B == 0)
        return r;
    m->ops->batch_in(m->input, &x, &y, B);
    forward(m, x, (int)B, 1);
    LPROF("softmax xent", r.loss = loss_of(m, y, (int)B));
    r.correct = correct_of(m, y, (int)B);
    backward(m, x, y, (int)B);
    LPROF("l2", r.loss += params_add_l2(&m->ps, wd));
    m->ps.steps++;
    if (trace_enabled()) { /* this rank's own gradients, before any averaging (for the graders) */
        double dot, norm;
        params_digest_at(m->ps.grads, m->ps.n, m->ps.device, &dot, &norm);
        trace_event("train_batch", "loss=%.17g correct=%d count=%zu grad_dot=%.17g grad_norm=%.17g",
                    r.loss, r.correct, r.count, dot, norm);
    }
    return r;
}

wrn_result wrn_eval_batch(wrn_model *m, const float *x, const int *y, size_t B, float *logits)
{
    wrn_result r = {0.0, 0, B};
    check_batch(m, B, "wrn_eval_batch");
    if (B == 0)
        return r;
    m->ops->batch_in(m->input, &x, &y, B);
    forward(m, x, (int)B, 0);
    r.loss = loss_of(m, y, (int)B);
    r.correct = correct_of(m, y, (int)B);
    if (logits)
        params_to_host(logits, m->logits, B * WRN_CLASSES, m->gpu);
    return r;
}
