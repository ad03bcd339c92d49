/* xent.h — softmax cross-entropy from logits (Keras categorical cross-entropy on one-hot labels),
 * mean over the batch, and argmax accuracy.
 *
 * Stable form: loss_i = logsumexp(z_i) − z_i[y_i] with the row maximum subtracted first.
 *
 * Public: xent_forward, xent_backward, xent_correct.
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

#endif
