/* layer_prof.h — optional per-layer timing of the model's forward and backward.
 *
 * Off by default; then each hook costs one load and branch. bench/train_speed turns it on for
 * a few extra steps and prints where a training step's time goes (conv by shape, batch norm,
 * ReLU, dropout, pools, dense, loss, optimizer...). Times are wall-clock seconds summed per name.
 *
 *   double t = lprof_start();           // 0 when off
 *   ... the layer ...
 *   lprof_stop(t, "bn fwd");            // or lprof_stopf(t, "conv%dx%d %d>%d fwd", ...)
 *
 * On a GPU model the layers only enqueue kernels: lprof_set_sync(gpu_context_sync) makes every
 * start and stop wait for the stream first, so each name gets its kernels' time (plus one launch
 * latency; the waits serialise the step, so the profiled steps run slower than the timed ones).
 *
 * Public: lprof_enable, lprof_on, lprof_set_sync, lprof_start, lprof_stop, lprof_stopf,
 *         lprof_count, lprof_entry, lprof_reset.
 */
#ifndef HVDLAB_LAYER_PROF_H
#define HVDLAB_LAYER_PROF_H

#include <stddef.h>

#define LPROF_NAME_LEN 48

extern int lprof_enabled_flag;

void lprof_enable(int on);
void lprof_set_sync(void (*sync)(void)); /* NULL: wall clock of the calls alone (the default) */
static inline int lprof_on(void) { return lprof_enabled_flag; }
double lprof_start(void);
void lprof_stop(double t0, const char *name);
void lprof_stopf(double t0, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Times one statement under a fixed name: LPROF("bn fwd", bn_forward_train(...)); */
#define LPROF(name, stmt)                                                                          \
    do {                                                                                           \
        const double lprof_t0_ = lprof_start();                                                    \
        stmt;                                                                                      \
        lprof_stop(lprof_t0_, name);                                                               \
    } while (0)

/* Entries in first-seen order: name, total seconds, calls. */
int lprof_count(void);
void lprof_entry(int i, const char **name, double *seconds, long *calls);
void lprof_reset(void);

#endif
