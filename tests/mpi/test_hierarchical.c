/* test_hierarchical.c — the one-host (shared window, single copy) and hierarchical allreduce
 * paths (coll/allreduce.h)
 * under mpirun -n 1..4, on one machine playing several hosts.
 *
 * Test-only host groups: allreduce_reconfigure(h, g) does what HVD_HOST_GROUP_SIZE=g does at
 * hvd_init (ranks r / g form one "host"): with 3 ranks and g = 2 the hosts are {0,1} and {2}
 * (uneven), g = 1 puts every rank on a host of its own, g = 0 keeps the one real host.
 * Each layout is checked for exact sums (values that are multiples of 1/4, exact in any order),
 * for bitwise agreement between ranks and for closeness to the ring on values that round, for
 * SUM and AVERAGE, fp16 compression, fusion, and lengths that cut pieces and slices unevenly.
 * The single-copy path must give the shared window's bits (both add in local-rank order) on
 * every length, buffers at new addresses and unaligned offsets call after call.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/memory.h"
#include "coll/allreduce.h"
#include "coll/shm.h"
#include "hvd/hvd.h"
#include "lib/ck_mpi.h"

typedef struct {
    int hierarchical, group;
    allreduce_path path;
    const char *label;
} layout;

static const layout LAYOUTS[] = {
    {0, 0, ALLREDUCE_SHM, "shm, every rank on the one host"},
    {0, 0, ALLREDUCE_CMA, "cma (single copy), every rank on the one host"},
    {0, 2, ALLREDUCE_CMA, "cma forced, hosts of 2 (the ring instead)"},
    {1, 0, ALLREDUCE_HIERARCHICAL, "hierarchical, every rank on one host"},
    {1, 1, ALLREDUCE_HIERARCHICAL, "hierarchical, one rank per host"},
    {1, 2, ALLREDUCE_HIERARCHICAL, "hierarchical, hosts of 2 (uneven with 3 ranks)"},
    {1, 3, ALLREDUCE_HIERARCHICAL, "hierarchical, hosts of 3 (uneven with 4 ranks)"},
    {1, 2, ALLREDUCE_AUTO, "HVD_HIERARCHICAL_ALLREDUCE=1 default path, hosts of 2"},
    {0, 2, ALLREDUCE_AUTO, "default path, hosts of 2"},
};
#define NLAYOUTS (sizeof LAYOUTS / sizeof LAYOUTS[0])

static void use(const layout *l)
{
    allreduce_reconfigure(l->hierarchical, l->group);
    allreduce_force_path(l->path);
}

static void use_ring(void)
{
    allreduce_reconfigure(0, 0);
    allreduce_force_path(ALLREDUCE_RING);
}

static void restore(void)
{
    allreduce_reconfigure(0, 0);
    allreduce_force_path(ALLREDUCE_AUTO);
}

#define PIECE_FLOATS (((size_t)1 << 20) / sizeof(float)) /* shm.c's default piece */

/* Lengths that cut everything unevenly: empty, single, fewer than the ranks, around a piece. */
static size_t lengths(size_t *out)
{
    size_t n = (size_t)hvd_size(), k = 0;
    out[k++] = 0;
    out[k++] = 1;
    out[k++] = n > 1 ? n - 1 : 2;
    out[k++] = n + 1;
    out[k++] = 5003;
    out[k++] = PIECE_FLOATS - 1;
    out[k++] = PIECE_FLOATS;
    out[k++] = PIECE_FLOATS + 1;
    out[k++] = 2 * PIECE_FLOATS + n + 3;
    out[k++] = 1000003;
    return k;
}

static float exact_val(size_t i, int rank)
{
    return (float)(i % 1021) * 0.25f + (float)(rank * 7 + 1);
}

static float exact_sum(size_t i, int size)
{
    return (float)(i % 1021) * 0.25f * (float)size + (float)(7 * size * (size - 1) / 2 + size);
}

/* Values that round when added: sums depend on the order. */
static float rough_val(size_t i, int rank)
{
    uint32_t x = (uint32_t)(i * 2654435761u) ^ (uint32_t)(rank * 40503 + 17);
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    return ((float)(x & 0xffffff) / (float)0x1000000 - 0.5f) * 3.7f;
}

/* FNV-1a of the result's bytes; equal on every rank when the ranks agree bitwise. */
static uint64_t hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static int same_on_every_rank(const void *p, size_t nbytes)
{
    unsigned long long h = hash_bytes(p, nbytes), lo, hi;
    MPI_Allreduce(&h, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&h, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
}

/* One host, the default: the shared window below the crossover, the single copy from it on
 * (allreduce.c's thresholds, restated: a changed threshold must change this too). */
static allreduce_path one_host_path(int huge, size_t bytes)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    size_t from = cores > 0 && hvd_size() > cores ? ALLREDUCE_CMA_FROM_SHARED_CORES
                                                  : ALLREDUCE_CMA_FROM_OWN_CORES;
    return huge && bytes >= from ? ALLREDUCE_CMA : ALLREDUCE_SHM;
}

/* The path the layout takes on this many ranks: what allreduce_choice must say. */
static allreduce_path expected_path(const layout *l, int huge, size_t bytes)
{
    int size = hvd_size(), hosts = l->group ? (size + l->group - 1) / l->group : 1;
    if (size == 1)
        return ALLREDUCE_RING;
    if (l->path == ALLREDUCE_AUTO)
        return hosts == 1 ? one_host_path(huge, bytes)
                          : l->hierarchical ? ALLREDUCE_HIERARCHICAL : ALLREDUCE_RING;
    if ((l->path == ALLREDUCE_SHM || l->path == ALLREDUCE_CMA) && hosts > 1)
        return ALLREDUCE_RING;
    return l->path;
}

#define HUGE_BYTES ((size_t)2 << 20)

START_TEST(layouts_take_their_path)
{
    int size = hvd_size();
    char *hp = memory_alloc(HUGE_BYTES), *plain = malloc(HUGE_BYTES);
    /* the kit's buffers are listed as huge-page ones where the kernel has THP on; malloc's not */
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    char thp[128] = "";
    if (f && !fgets(thp, sizeof thp, f))
        thp[0] = '\0';
    if (f)
        fclose(f);
    int thp_on = strstr(thp, "[always]") || strstr(thp, "[madvise]");
    CK_EXPECT(memory_on_huge_pages(hp, HUGE_BYTES) == thp_on &&
                  memory_on_huge_pages(hp + 4096, 4096) == thp_on &&
                  !memory_on_huge_pages(hp + 4096, HUGE_BYTES) && /* runs past its end */
                  !memory_on_huge_pages(plain, HUGE_BYTES),
              "memory_on_huge_pages: %d %d %d %d (THP %s)", memory_on_huge_pages(hp, HUGE_BYTES),
              memory_on_huge_pages(hp + 4096, 4096), memory_on_huge_pages(hp + 4096, HUGE_BYTES),
              memory_on_huge_pages(plain, HUGE_BYTES), thp_on ? "on" : "off");
    for (size_t k = 0; k < NLAYOUTS; k++) {
        const layout *l = &LAYOUTS[k];
        use(l);
        int hosts = l->group ? (size + l->group - 1) / l->group : 1;
        CK_EXPECT(allreduce_hosts() == hosts, "%s: %d hosts, want %d", l->label,
                  allreduce_hosts(), hosts);
        for (size_t bytes = 4; bytes <= HUGE_BYTES; bytes *= 2)
            for (int huge = 0; huge < 2; huge++) {
                allreduce_path got = allreduce_choice(huge ? hp : plain, bytes),
                               want = expected_path(l, huge, bytes);
                CK_EXPECT(got == want, "%s, %zu bytes%s: path %s, want %s", l->label, bytes,
                          huge ? " on huge pages" : "", allreduce_path_name(got),
                          allreduce_path_name(want));
            }
    }
    memory_free(hp);
    free(plain);
    restore();
    CK_AGREE();
}
END_TEST

static void check_exact(hvd_op op)
{
    int rank = hvd_rank(), size = hvd_size();
    size_t lens[16], nl = lengths(lens);
    for (size_t k = 0; k < NLAYOUTS; k++) {
        use(&LAYOUTS[k]);
        for (size_t j = 0; j < nl; j++) {
            size_t n = lens[j];
            float *b = malloc((n ? n : 1) * sizeof *b);
            for (size_t i = 0; i < n; i++)
                b[i] = exact_val(i, rank);
            hvd_allreduce(b, n, op, "exact");
            size_t bad = 0, first = 0;
            for (size_t i = 0; i < n; i++) {
                float want = exact_sum(i, size);
                if (op == HVD_AVERAGE)
                    want *= 1.0f / (float)size; /* one rounding, the same on every path */
                if (b[i] != want && bad++ == 0)
                    first = i;
            }
            CK_EXPECT(bad == 0, "%s, %s, n=%zu: %zu wrong, first at %zu: %g, want %g",
                      LAYOUTS[k].label, op == HVD_SUM ? "sum" : "average", n, bad, first,
                      (double)b[first], (double)(exact_sum(first, size) *
                                                 (op == HVD_AVERAGE ? 1.0f / (float)size : 1.0f)));
            free(b);
        }
    }
    restore();
    CK_AGREE();
}

START_TEST(exact_sums_every_layout) { check_exact(HVD_SUM); }
END_TEST

START_TEST(exact_averages_every_layout) { check_exact(HVD_AVERAGE); }
END_TEST

/* Rounding values: bitwise the same on every rank; within summation-order tolerance of the
 * ring: |x - ring| <= size * FLT_EPSILON * sum of |values| (each of the size-1 additions rounds
 * by at most half an ulp of a partial sum no larger than that); bitwise the ring's where the
 * additions are the ring's own (2 ranks in one window; one rank per host). */
static void check_rough(hvd_op op, int fp16)
{
    int rank = hvd_rank(), size = hvd_size();
    size_t n = 3 * PIECE_FLOATS / 2 + 77;
    float *ring = malloc(n * sizeof *ring), *b = malloc(n * sizeof *b);
    use_ring();
    for (size_t i = 0; i < n; i++)
        ring[i] = rough_val(i, rank);
    hvd_allreduce_ex(ring, n, op, "rough", fp16 ? HVD_COMPRESS_FP16 : HVD_COMPRESS_NONE);
    /* fp16: every addition rounds to half (11 bits), and the inputs themselves do */
    double rel = fp16 ? ldexp(1.0, -10) : FLT_EPSILON;
    for (size_t k = 0; k < NLAYOUTS; k++) {
        const layout *l = &LAYOUTS[k];
        use(l);
        for (size_t i = 0; i < n; i++)
            b[i] = rough_val(i, rank);
        hvd_allreduce_ex(b, n, op, "rough", fp16 ? HVD_COMPRESS_FP16 : HVD_COMPRESS_NONE);
        CK_EXPECT(same_on_every_rank(b, n * sizeof *b), "%s%s: ranks differ bitwise", l->label,
                  fp16 ? ", fp16" : "");
        allreduce_path p = expected_path(l, 0, n * sizeof *b);
        int ring_order = size <= 2 || p == ALLREDUCE_RING ||
                         (p == ALLREDUCE_HIERARCHICAL && l->group == 1);
        size_t bad = 0, first = 0;
        double worst = 0;
        for (size_t i = 0; i < n; i++) {
            double sumabs = 0;
            for (int r = 0; r < size; r++)
                sumabs += fabs((double)rough_val(i, r));
            if (op == HVD_AVERAGE)
                sumabs /= size;
            double d = fabs((double)b[i] - (double)ring[i]), tol = (size + 1) * rel * sumabs;
            int off = ring_order ? b[i] != ring[i] : d > tol;
            if (off && bad++ == 0)
                first = i;
            worst = d > worst ? d : worst;
        }
        CK_EXPECT(bad == 0, "%s%s: %zu of %zu off the ring's %s, first at %zu: %.9g vs %.9g",
                  l->label, fp16 ? ", fp16" : "", bad, n, ring_order ? "bits" : "tolerance",
                  first, (double)b[first], (double)ring[first]);
    }
    restore();
    free(ring);
    free(b);
    CK_AGREE();
}

START_TEST(rounding_sums_agree) { check_rough(HVD_SUM, 0); }
END_TEST

START_TEST(rounding_averages_agree) { check_rough(HVD_AVERAGE, 0); }
END_TEST

START_TEST(fp16_agrees) { check_rough(HVD_SUM, 1); check_rough(HVD_AVERAGE, 1); }
END_TEST

/* The single copy and the window's whole-piece sums against the window's slices, bitwise, on
 * values that round: every length, fp16 too, SUM and AVERAGE, each call on a buffer at a new
 * address (an offset of 1..3 elements into a fresh allocation: unaligned for the copies' vector
 * loads), the slices' result made first on another buffer. */
START_TEST(one_host_ways_give_the_same_bits)
{
    int rank = hvd_rank();
    size_t lens[16], nl = lengths(lens);
    for (int fp16 = 0; fp16 < 2; fp16++)
        for (int avg = 0; avg < 2; avg++)
            for (size_t j = 0; j < nl; j++) {
                size_t n = lens[j], off = 1 + (j + (size_t)fp16) % 3;
                float *want = malloc((n + 4) * sizeof *want), *got = malloc((n + 4) * sizeof *got);
                for (size_t i = 0; i < n + 4; i++)
                    want[i] = got[i] = rough_val(i + 3, rank);
                hvd_op op = avg ? HVD_AVERAGE : HVD_SUM;
                int c = fp16 ? HVD_COMPRESS_FP16 : HVD_COMPRESS_NONE;
                allreduce_force_path(ALLREDUCE_SHM);
                shm_set_whole_bytes(0); /* a slice per rank, two barriers per piece */
                hvd_allreduce_ex(want + off, n, op, "window", c);
                for (int way = 0; way < 2; way++) {
                    for (size_t i = 0; i < n + 4; i++)
                        got[i] = rough_val(i + 3, rank);
                    /* way 0: the single copy; 1: the window, every piece summed whole */
                    allreduce_force_path(way ? ALLREDUCE_SHM : ALLREDUCE_CMA);
                    shm_set_whole_bytes(way ? (size_t)1 << 30 : (size_t)-1);
                    hvd_allreduce_ex(got + off, n, op, way ? "whole" : "single", c);
                    size_t bad = 0, first = 0;
                    for (size_t i = 0; i < n + 4; i++) /* the elements around it untouched */
                        if (memcmp(&want[i], &got[i], sizeof *got) != 0 && bad++ == 0)
                            first = i;
                    CK_EXPECT(bad == 0, "%s, %s%s, n=%zu at +%zu: %zu elements differ from the "
                              "window's slices, first at %zu: %.9g vs %.9g",
                              way ? "whole pieces" : "single copy", avg ? "average" : "sum",
                              fp16 ? ", fp16" : "", n, off, bad, first, (double)got[first],
                              (double)want[first]);
                    CK_EXPECT(same_on_every_rank(got + off, n * sizeof *got),
                              "%s, n=%zu: ranks differ bitwise", way ? "whole" : "single", n);
                }
                shm_set_whole_bytes((size_t)-1);
                free(want);
                free(got);
            }
    restore();
    CK_AGREE();
}
END_TEST

/* Fusion: tensors scattered in memory and back to back, ops alternating, a threshold that cuts
 * them into several groups; every value exact. */
START_TEST(fusion_every_layout)
{
    static const size_t sizes[] = {1, 7, 1000, 0, 33333, 5, PIECE_FLOATS + 3, 2, 777};
    enum { NT = sizeof sizes / sizeof sizes[0] };
    int rank = hvd_rank(), size = hvd_size();
    size_t total = 0;
    for (int t = 0; t < NT; t++)
        total += sizes[t];
    float *flat = malloc(total * sizeof *flat), *sep[NT];
    size_t threshold_was = hvd_fusion_threshold();
    for (size_t k = 0; k < NLAYOUTS; k++) {
        use(&LAYOUTS[k]);
        for (int contiguous = 0; contiguous < 2; contiguous++) {
            hvd_set_fusion_threshold(contiguous ? ((size_t)1 << 30) : 40000 * sizeof(float));
            for (int t = 0, o = 0; t < NT; o += (int)sizes[t], t++) {
                sep[t] = contiguous ? flat + o : malloc((sizes[t] ? sizes[t] : 1) * sizeof(float));
                for (size_t i = 0; i < sizes[t]; i++)
                    sep[t][i] = exact_val(i + (size_t)t, rank);
            }
            for (int t = 0; t < NT; t++) { /* one op throughout when contiguous: one group */
                char name[16];
                snprintf(name, sizeof name, "t%d", t);
                hvd_allreduce_async(sep[t], sizes[t], contiguous || t % 2 ? HVD_SUM : HVD_AVERAGE,
                                    name, HVD_COMPRESS_NONE);
            }
            hvd_synchronize();
            for (int t = 0; t < NT; t++) {
                size_t bad = 0;
                float scale = !contiguous && t % 2 == 0 ? 1.0f / (float)size : 1.0f;
                for (size_t i = 0; i < sizes[t]; i++)
                    bad += sep[t][i] != exact_sum(i + (size_t)t, size) * scale;
                CK_EXPECT(bad == 0, "%s, %s: tensor %d: %zu of %zu wrong", LAYOUTS[k].label,
                          contiguous ? "back to back" : "scattered", t, bad, sizes[t]);
                if (!contiguous)
                    free(sep[t]);
            }
        }
    }
    hvd_set_fusion_threshold(threshold_was);
    restore();
    free(flat);
    CK_AGREE();
}
END_TEST

/* Finding the hosts again frees the old window: never more than one per process. */
START_TEST(windows_do_not_pile_up)
{
    float x[64];
    for (int round = 0; round < 5; round++) {
        use(&LAYOUTS[round % NLAYOUTS]);
        for (int i = 0; i < 64; i++)
            x[i] = 1.0f;
        hvd_allreduce(x, 64, HVD_SUM, "x");
        CK_EXPECT(shm_windows_open() <= 1, "round %d: %d windows open", round, shm_windows_open());
        CK_EXPECT(x[5] == (float)hvd_size(), "round %d: %g", round, (double)x[5]);
    }
    restore();
    /* leave the default path's window open: hvd_shutdown must free it (checked in main) */
    hvd_allreduce(x, 64, HVD_SUM, "x");
    CK_EXPECT(shm_windows_open() == (hvd_size() > 1), "%d windows open at the end",
              shm_windows_open());
    CK_AGREE();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("hierarchical");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, layouts_take_their_path);
    tcase_add_test(tc, exact_sums_every_layout);
    tcase_add_test(tc, exact_averages_every_layout);
    tcase_add_test(tc, rounding_sums_agree);
    tcase_add_test(tc, rounding_averages_agree);
    tcase_add_test(tc, fp16_agrees);
    tcase_add_test(tc, one_host_ways_give_the_same_bits);
    tcase_add_test(tc, fusion_every_layout);
    tcase_add_test(tc, windows_do_not_pile_up);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    int rc = ck_mpi_main(argc, argv, suite(), 1);
    if (shm_windows_open() != 0) { /* hvd_shutdown must have freed the host's window */
        fprintf(stderr, "test_hierarchical: %d shared window(s) left open after hvd_shutdown\n",
                shm_windows_open());
        rc = EXIT_FAILURE;
    }
    return rc;
}
