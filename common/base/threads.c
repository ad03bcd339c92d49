/* threads.c — the layers' thread count. See threads.h.
 * Public: compute_set_threads, compute_threads, compute_zero. */
#include "base/threads.h"

#include <cblas.h>
#include <string.h>
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

void compute_zero(float *p, size_t n)
{
    const size_t piece = (size_t)1 << 16; /* 256 KiB: small buffers stay on one thread */
    const long pieces = (long)((n + piece - 1) / piece);
#pragma omp parallel for schedule(static) num_threads(compute_threads()) if (pieces > 1)
    for (long i = 0; i < pieces; i++) {
        const size_t a = (size_t)i * piece, b = a + piece < n ? a + piece : n;
        memset(p + a, 0, (b - a) * sizeof *p);
    }
}
