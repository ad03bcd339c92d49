/* layer_prof.c — per-layer time totals. See layer_prof.h.
 * Public: lprof_enable, lprof_set_clock, lprof_start, lprof_stop, lprof_stopf, lprof_flush,
 *         lprof_count, lprof_entry, lprof_reset. Single-threaded use (the model's step runs on
 *         one thread). */
#include "nn/layer_prof.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/timer.h"

#define LPROF_MAX 256
/* Pairs of marks waiting for lprof_flush: a few training steps' worth of layers. */
#define LPROF_PENDING 4096

int lprof_enabled_flag;

static struct {
    char name[LPROF_NAME_LEN];
    double seconds;
    long calls;
} entries[LPROF_MAX];
static int nentries;

static const lprof_clock *clock_fn;
static struct {
    int entry, a, b;
} pending[LPROF_PENDING];
static int npending;

void lprof_enable(int on) { lprof_enabled_flag = on != 0; }

/* The pending pairs' seconds added to their names; the marks are kept (a timed statement may
 * still be open, its start mark among them). */
static void settle(void)
{
    for (int k = 0; k < npending; k++)
        entries[pending[k].entry].seconds += clock_fn->seconds(pending[k].a, pending[k].b);
    npending = 0;
}

void lprof_flush(void)
{
    if (!clock_fn)
        return;
    settle();
    clock_fn->release();
}

void lprof_set_clock(const lprof_clock *clock)
{
    lprof_flush();
    clock_fn = clock;
}

double lprof_start(void)
{
    if (!lprof_enabled_flag)
        return 0.0;
    if (clock_fn)
        return (double)clock_fn->mark();
    return timer_seconds();
}

/* The entry of name: found, else added; the last one when the table is full. */
static int entry_of(const char *name)
{
    int i = 0;
    while (i < nentries && strcmp(entries[i].name, name) != 0)
        i++;
    if (i == nentries) {
        if (nentries == LPROF_MAX)
            i = LPROF_MAX - 1; /* table full: the last entry collects the rest */
        else
            snprintf(entries[nentries++].name, LPROF_NAME_LEN, "%s", name);
    }
    return i;
}

void lprof_stop(double t0, const char *name)
{
    if (!lprof_enabled_flag)
        return;
    if (clock_fn) {
        const int b = clock_fn->mark(), i = entry_of(name);
        entries[i].calls++;
        if (npending == LPROF_PENDING)
            settle();
        pending[npending].entry = i;
        pending[npending].a = (int)t0;
        pending[npending].b = b;
        npending++;
        return;
    }
    const double dt = timer_seconds() - t0;
    const int i = entry_of(name);
    entries[i].seconds += dt;
    entries[i].calls++;
}

void lprof_stopf(double t0, const char *fmt, ...)
{
    if (!lprof_enabled_flag)
        return;
    char name[LPROF_NAME_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    lprof_stop(t0, name);
}

int lprof_count(void)
{
    lprof_flush();
    return nentries;
}

void lprof_entry(int i, const char **name, double *seconds, long *calls)
{
    *name = entries[i].name;
    *seconds = entries[i].seconds;
    *calls = entries[i].calls;
}

void lprof_reset(void)
{
    npending = 0;
    if (clock_fn)
        clock_fn->release();
    nentries = 0;
}
