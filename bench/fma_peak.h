/* fma_peak.h — the machine's fp32 FMA peak, measured at run time (header-only: every file in
 * bench/ is its own program).
 *
 * A "% of peak" is only honest against the widest FMA the CPU runs: an AVX2 loop on a CPU with
 * two AVX-512 FMA ports (most Xeons since Skylake-SP) measures half the peak, and figures over
 * 100 % follow. So both loops run where the CPU has them, and the peak is the faster one; the
 * caller prints which. On Zen 4 the two are equal (its AVX-512 is two 256-bit halves).
 * Each loop keeps 12 independent accumulator chains, more than latency (4-5 cycles) × FMA
 * ports (2) needs, so the loop is bound by throughput, not by latency.
 */
#ifndef HVDLAB_BENCH_FMA_PEAK_H
#define HVDLAB_BENCH_FMA_PEAK_H

#include <immintrin.h>
#include <omp.h>
#include <stdio.h>

#include "base/timer.h"

#define FMA_PEAK_CHAINS 12

/* Twelve named accumulators, not an array: GCC keeps an array of vectors in memory at -O2, and
 * the loop then measures store-to-load forwarding instead of the FMA units. The body is written
 * once, over V (vector type), SET1, FMADD, ADD, STORE and LANES, defined for each width. */
#define FMA_PEAK_12(op) op(0) op(1) op(2) op(3) op(4) op(5) op(6) op(7) op(8) op(9) op(10) op(11)
#define FMA_PEAK_DECL(k) V a##k = SET1((float)(k));
#define FMA_PEAK_STEP(k) a##k = FMADD(a##k, m, c);
#define FMA_PEAK_SUM(k) s = ADD(s, a##k);
#define FMA_PEAK_BODY                                                                          \
    const V m = SET1(0.999999f), c = SET1(1e-7f);                                              \
    V s = SET1(0.0f);                                                                          \
    FMA_PEAK_12(FMA_PEAK_DECL)                                                                 \
    for (long i = 0; i < n; i++) {                                                             \
        FMA_PEAK_12(FMA_PEAK_STEP)                                                             \
    }                                                                                          \
    FMA_PEAK_12(FMA_PEAK_SUM)                                                                  \
    float o[LANES];                                                                            \
    STORE(o, s);                                                                               \
    return o[0];

#define V __m256
#define SET1 _mm256_set1_ps
#define FMADD _mm256_fmadd_ps
#define ADD _mm256_add_ps
#define STORE _mm256_storeu_ps
#define LANES 8
__attribute__((target("avx2,fma"))) static float fma_peak_loop_avx2(long n) { FMA_PEAK_BODY }
#undef V
#undef SET1
#undef FMADD
#undef ADD
#undef STORE
#undef LANES

#define V __m512
#define SET1 _mm512_set1_ps
#define FMADD _mm512_fmadd_ps
#define ADD _mm512_add_ps
#define STORE _mm512_storeu_ps
#define LANES 16
__attribute__((target("avx512f"))) static float fma_peak_loop_avx512(long n) { FMA_PEAK_BODY }
#undef V
#undef SET1
#undef FMADD
#undef ADD
#undef STORE
#undef LANES

/* GFLOP/s of one loop on `threads` threads: best of 3 runs of ~0.1-0.2 s. */
static double fma_peak_run(float (*loop)(long), int lanes, int threads)
{
    const long n = 20000000;
    double best = 0;
    for (int r = 0; r < 3; r++) {
        float sink = 0;
        const double t0 = timer_seconds();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
        sink += loop(n);
        const double g = threads * (double)n * FMA_PEAK_CHAINS * 2.0 * lanes /
                         (timer_seconds() - t0) / 1e9;
        if (g > best)
            best = g;
        if (sink == 12345.0f)
            printf(" "); /* the result is used: the loop stays */
    }
    return best;
}

/* The peak on `threads` threads: the faster of the AVX2 and (where present) AVX-512 loops.
 * *isa names the one that won ("avx2" or "avx512"); *avx2, *avx512 get both (0 if absent). */
static double fma_peak_gflops(int threads, const char **isa, double *avx2, double *avx512)
{
    __builtin_cpu_init();
    *avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
                ? fma_peak_run(fma_peak_loop_avx2, 8, threads)
                : 0;
    *avx512 = __builtin_cpu_supports("avx512f") ? fma_peak_run(fma_peak_loop_avx512, 16, threads)
                                                 : 0;
    *isa = *avx512 > *avx2 ? "avx512" : "avx2";
    return *avx512 > *avx2 ? *avx512 : *avx2;
}

#endif
