/* metrics.c — running loss/accuracy and hvd_metric_average. See metrics.h.
 * Public: metrics_reset, metrics_add, metrics_loss, metrics_accuracy, metrics_count,
 *         hvd_metric_average, metrics_last_validation.
 */
#include "train/metrics.h"

#include <stdio.h>
#include <string.h>

#include "base/trace.h"
#include "hvd/hvd.h"

void metrics_reset(metrics *m) { memset(m, 0, sizeof *m); }

void metrics_add(metrics *m, double batch_mean_loss, size_t correct, size_t count)
{
    m->loss_sum += batch_mean_loss * (double)count;
    m->correct += correct;
    m->count += count;
    m->averaged = 0;
}

double metrics_loss(const metrics *m)
{
    if (m->averaged)
        return m->avg_loss;
    return m->count ? m->loss_sum / (double)m->count : 0.0;
}

double metrics_accuracy(const metrics *m)
{
    if (m->averaged)
        return m->avg_accuracy;
    return m->count ? (double)m->correct / (double)m->count : 0.0;
}

size_t metrics_count(const metrics *m) { return m->count; }

static unsigned val_serial;  /* averages of "val" so far */
static double val_accuracy;  /* the last one's accuracy */

unsigned metrics_last_validation(double *accuracy)
{
    if (accuracy)
        *accuracy = val_accuracy;
    return val_serial;
}

void hvd_metric_average(metrics *m, const char *name)
{
    if (!name)
        name = "";
    /* Horovod averages each metric as its own named tensor, sorted by name; both are queued
     * and then reduced together (one fused allreduce), the same bits on every rank. */
    float acc = (float)metrics_accuracy(m), loss = (float)metrics_loss(m);
    trace_event("metrics", "when=local name=%s loss=%.9g accuracy=%.9g count=%zu", name,
                (double)loss, (double)acc, m->count);
    char acc_name[96], loss_name[96];
    snprintf(acc_name, sizeof acc_name, "%s.accuracy", name);
    snprintf(loss_name, sizeof loss_name, "%s.loss", name);
    hvd_allreduce_async(&acc, 1, HVD_AVERAGE, acc_name, HVD_COMPRESS_NONE);
    hvd_allreduce_async(&loss, 1, HVD_AVERAGE, loss_name, HVD_COMPRESS_NONE);
    hvd_synchronize();
    m->avg_accuracy = acc;
    m->avg_loss = loss;
    m->averaged = 1;
    trace_event("metrics", "when=averaged name=%s loss=%.9g accuracy=%.9g", name, (double)loss,
                (double)acc);
    if (strcmp(name, "val") == 0) { /* what a checkpoint written next counts (progress.c) */
        val_accuracy = metrics_accuracy(m);
        val_serial++;
    }
}
