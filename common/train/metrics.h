/* metrics.h — an epoch's running loss and accuracy, and Horovod's metric averaging.
 *
 *   Keras / Horovod                                    hvdlab
 *   the "loss" and "accuracy" shown during fit()    -> metrics_add(&m, loss, correct, count)
 *                                                      per batch; metrics_loss(&m),
 *                                                      metrics_accuracy(&m)
 *   hvd.callbacks.MetricAverageCallback()           -> hvd_metric_average(&m, "train")
 *
 * The loss is the sample-weighted mean of the batch mean losses (Keras weights each batch's loss
 * by its size), the accuracy is correct / count over the epoch.
 *
 * hvd_metric_average, like MetricAverageCallback, replaces each metric value by the plain mean of
 * the per-rank values (not weighted by the ranks' sample counts), one named allreduce per metric
 * (queued, then fused into one) in a fixed name order ("<name>.accuracy" then "<name>.loss", sorted
 * as Horovod sorts the logs), so every rank ends with the same bits. Every rank must call it, in
 * the same order. Trace events (HVDLAB_TRACE): "metrics when=local name=<name> loss= accuracy=
 * count=" before and "metrics when=averaged name=<name> loss= accuracy=" after; values printed with
 * %.9g are the float values that went into / came out of the allreduce.
 *
 * Public: metrics_reset, metrics_add, metrics_loss, metrics_accuracy, metrics_count,
 *         hvd_metric_average, metrics_last_validation.
 */
#ifndef HVDLAB_METRICS_H
#define HVDLAB_METRICS_H

#include <stddef.h>

typedef struct {
    double loss_sum;  /* Σ batch mean loss × batch count */
    size_t correct;   /* Σ correct predictions */
    size_t count;     /* Σ samples */
    int averaged;     /* 1 after hvd_metric_average (until the next add or reset) */
    double avg_loss, avg_accuracy; /* the averaged values when averaged = 1 */
} metrics;

void metrics_reset(metrics *m);
/* One batch: its mean loss, correct predictions and size. Ends any averaged state. */
void metrics_add(metrics *m, double batch_mean_loss, size_t correct, size_t count);
/* Running values (0 before any sample), or the averaged ones after hvd_metric_average. */
double metrics_loss(const metrics *m);
double metrics_accuracy(const metrics *m);
size_t metrics_count(const metrics *m); /* samples added on this rank */

/* Averages loss and accuracy over all ranks (see above). name: "train", "val", "test"… */
void hvd_metric_average(metrics *m, const char *name);

/* How many times metrics named "val" were averaged, and (accuracy, may be NULL) the last one's
 * averaged accuracy: the epoch's validation a checkpoint written before progress_epoch_end
 * already counts (progress.c). */
unsigned metrics_last_validation(double *accuracy);

#endif
