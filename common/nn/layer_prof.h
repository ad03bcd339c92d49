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
 * On a GPU model the layers only enqueue kernels, so the wall clock would time the enqueueing.
 * lprof_set_clock with GPU marks (nn/gpu_marks.h) times the kernels instead: start and stop
 * record a mark on the stream and nobody waits; the seconds between each pair are read at
 * lprof_flush or lprof_count (and when the table of pending pairs is full), so each name gets
 * the GPU's time from its first kernel's start to its last one's end, gaps included, and the
 * step runs as fast as unprofiled. (Until 2026-11-26 a sync hook waited for the stream around
 * every layer instead, which counted host time too and slowed the profiled steps.)
 *
 * Public: lprof_enable, lprof_on, lprof_set_clock, lprof_start, lprof_stop, lprof_stopf,
 *         lprof_flush, lprof_count, lprof_entry, lprof_reset.
 */
#ifndef HVDLAB_LAYER_PROF_H
#define HVDLAB_LAYER_PROF_H

#include <stddef.h>

#define LPROF_NAME_LEN 48

extern int lprof_enabled_flag;

void lprof_enable(int on);

/* A clock of marks: mark() records one and returns its number (>= 0); seconds(a, b) is the time
 * from mark a to mark b (it may wait for b); release() says every mark may be reused. */
typedef struct {
    int (*mark)(void);
    double (*seconds)(int a, int b);
    void (*release)(void);
} lprof_clock;
/* NULL: back to the wall clock (the default). Flushes what the previous clock left pending. */
void lprof_set_clock(const lprof_clock *clock);
/* Adds the pending pairs' seconds to their names and releases the marks: call it where no
 * timed statement is open (between steps), as its start mark is released too. */
void lprof_flush(void);
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

/* Entries in first-seen order: name, total seconds, calls (lprof_count flushes first, so no
 * timed statement may be open then either). */
int lprof_count(void);
void lprof_entry(int i, const char **name, double *seconds, long *calls);
void lprof_reset(void);

#endif
