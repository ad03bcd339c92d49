/* xent.h — softmax cross-entropy from logits (Keras categorical cross-entropy on one-hot labels),
 * mean over the batch, and argmax accuracy.
 *
 * Stable form: loss_i = logsumexp(z_i) − z_i[y_i] with the row maximum subtracted first.
 *
 * Public: xent_forward, xent_backward, xent_correct; with HVDLAB_CUDA the same names + _cuda.
 */
#ifndef HVDLAB_XENT_H
#define HVDLAB_XENT_H

/* Mean loss over the n rows; writes the softmax probabilities (saved for backward). Labels must
 * be in [0, k) (fatal_error otherwise: a label outside the classes is a caller bug). */
double xent_forward(float *probs /* (n,k) out */, const float *logits /* (n,k) */,
                    const int *labels /* (n) */, int n, int k);

/* dlogits += scale · (probs − onehot(labels)) / n: the gradient of scale · mean loss. */
void xent_backward(float *dlogits /* (n,k) += */, const float *probs /* (n,k) */,
                   const int *labels /* (n) */, int n, int k, float scale);

/* Rows whose argmax (first maximum) equals the label. */
int xent_correct(const float *logits /* (n,k) */, const int *labels /* (n) */, int n, int k);

#ifdef HVDLAB_CUDA
/* CUDA twins (xent_cuda.cu): device pointers (labels too), the stream of nn/gpu_context.h.
 * xent_forward_cuda and xent_correct_cuda wait for the stream and bring back one number;
 * a label outside [0, k) stops the process as on the CPU. */
double xent_forward_cuda(float *probs, const float *logits, const int *labels, int n, int k);
void xent_backward_cuda(float *dlogits, const float *probs, const int *labels, int n, int k,
                        float scale);
int xent_correct_cuda(const float *logits, const int *labels, int n, int k);
#endif

#endif
