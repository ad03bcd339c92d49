/* threads.c — the layers' thread count. See threads.h.
 * Public: compute_set_threads, compute_threads. */
#include "threads.h"

#include <cblas.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static int explicit_threads; /* 0: follow OpenBLAS */

void compute_set_threads(int n)
{
    explicit_threads = n > 0 ? n : 0;
    if (n > 0)
        openblas_set_num_threads(n);
}

int compute_threads(void)
{
    int n = explicit_threads ? explicit_threads : openblas_get_num_threads();
    if (n < 1)
        n = 1;
#ifdef _OPENMP
    /* oneDNN sizes its parallel regions by omp_get_max_threads(): keep it equal. */
    if (omp_get_max_threads() != n)
        omp_set_num_threads(n);
#endif
    return n;
}
