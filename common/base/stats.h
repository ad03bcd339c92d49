/* stats.h — order statistics of timing samples: the one sort and median the runtime's autotune
 * and the benchmarks share.
 * Public: stats_sort, stats_median. */
#ifndef HVDLAB_STATS_H
#define HVDLAB_STATS_H

#include <stddef.h>

/* Sorts v[0..n) ascending, in place. */
void stats_sort(double *v, size_t n);
/* The median of v[0..n) (the mean of the middle two when n is even; 0 when n is 0).
 * Sorts v in place, so v[0] is the minimum afterwards. */
double stats_median(double *v, size_t n);

#endif
