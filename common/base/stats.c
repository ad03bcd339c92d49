/* stats.c — order statistics of timing samples. See stats.h.
 * Public: stats_sort, stats_median. */
#include "base/stats.h"

#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void stats_sort(double *v, size_t n) { qsort(v, n, sizeof *v, cmp_double); }

double stats_median(double *v, size_t n)
{
    if (n == 0)
        return 0.0;
    stats_sort(v, n);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
