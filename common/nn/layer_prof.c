/* layer_prof.c — per-layer wall-clock totals. See layer_prof.h.
 * Public: lprof_enable, lprof_set_sync, lprof_start, lprof_stop, lprof_stopf, lprof_count,
 *         lprof_entry, lprof_reset. Single-threaded use (the model's step runs on one thread). */
#include "nn/layer_prof.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/timer.h"

#define LPROF_MAX 256

int lprof_enabled_flag;

static struct {
    char name[LPROF_NAME_LEN];
    double seconds;
    long calls;
} entries[LPROF_MAX];
static int nentries;

static void (*sync_fn)(void);

void lprof_enable(int on) { lprof_enabled_flag = on != 0; }

void lprof_set_sync(void (*sync)(void)) { sync_fn = sync; }

double lprof_start(void)
{
    if (!lprof_enabled_flag)
        return 0.0;
    if (sync_fn)
        sync_fn();
    return timer_seconds();
}

void lprof_stop(double t0, const char *name)
{
    if (!lprof_enabled_flag)
        return;
    if (sync_fn)
        sync_fn();
    const double dt = timer_seconds() - t0;
    int i = 0;
    while (i < nentries && strcmp(entries[i].name, name) != 0)
        i++;
    if (i == nentries) {
        if (nentries == LPROF_MAX)
            i = LPROF_MAX - 1; /* table full: the last entry collects the rest */
        else
            snprintf(entries[nentries++].name, LPROF_NAME_LEN, "%s", name);
    }
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

int lprof_count(void) { return nentries; }

void lprof_entry(int i, const char **name, double *seconds, long *calls)
{
    *name = entries[i].name;
    *seconds = entries[i].seconds;
    *calls = entries[i].calls;
}

void lprof_reset(void) { nentries = 0; }
