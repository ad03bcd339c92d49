/* test_collectives.c — allreduce, broadcast, allgather and device pinning under mpirun -n 1..4.
 * Values depend on the position and the rank (an all-ones test cannot tell chunks apart), and
 * are small multiples of 1/4 so every expected sum is exact in float. */
#include <cblas.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "coll/allreduce.h"
#include "coll/ring.h"
#include "hvd/device.h"
#include "hvd/hvd.h"
#include "lib/ck_mpi.h"

enum { HOST_NAME_LEN = 256 };

static float val(size_t i, int rank) { return (float)(i % 1021) * 0.25f + (float)(rank * 7 + 1); }

/* Sum over ranks of val(i, r). */
static float sum_val(size_t i, int size)
{
    return (float)(i % 1021) * 0.25f * (float)size + (float)(7 * size * (size - 1) / 2 + size);
}

static float *filled(size_t n, int rank)
{
    float *b = malloc((n ? n : 1) * sizeof *b);
    ck_assert_ptr_nonnull(b);
    for (size_t i = 0; i < n; i++)
        b[i] = val(i, rank);
    return b;
}

/* Lengths that exercise empty, single, uneven and large chunks for the current size. */
static size_t lengths(size_t *out)
{
    size_t n = (size_t)hvd_size(), k = 0;
    out[k++] = 0;
    out[k++] = 1;
    out[k++] = n > 1 ? n - 1 : 2;
    out[k++] = n + 1;
    out[k++] = 5003;              /* 20 KB: recursive doubling when N is a power of two */
    out[k++] = 1000003;           /* prime: no chunking divides it */
    out[k++] = ((size_t)3 << 20) + 5; /* 12 MiB: several ring segments per chunk */
    return k;
}

/* Every rank must end with the very same bits (weights that drift apart by one ulp per step
 * are weights out of sync): compare each rank's result with rank 0's. */
static void expect_identical_across_ranks(const float *b, size_t n, const char *what)
{
    float *ref = malloc((n ? n : 1) * sizeof *ref);
    memcpy(ref, b, n * sizeof *ref);
    hvd_broadcast(ref, n, 0, "reference");
    CK_EXPECT(memcmp(ref, b, n * sizeof *ref) == 0, "%s: rank %d differs from rank 0", what,
              hvd_rank());
    free(ref);
}

/* The default path (with every rank on one host the shared window, coll/allreduce.h), then the
 * ring forced. */
static void check_allreduce(hvd_op op)
{
    size_t lens[8];
    size_t k = lengths(lens);
    int rank = hvd_rank(), size = hvd_size();
    for (size_t tp = 0; tp < 2 * k; tp++) {
        size_t t = tp % k;
        allreduce_force_path(tp < k ? ALLREDUCE_AUTO : ALLREDUCE_RING);
        size_t n = lens[t];
        float *b = filled(n, rank);
        hvd_allreduce(b, n, op, "check");
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < n; i++) {
            float want = sum_val(i, size);
            if (op == HVD_AVERAGE)
                want /= (float)size;
            float tol = op == HVD_AVERAGE ? 1e-5f * (want < 0 ? -want : want) : 0.0f;
            float d = b[i] - want;
            if (d > tol || d < -tol) {
                if (!bad++)
                    first = i;
            }
        }
        CK_EXPECT(bad == 0, "%s, %s path, n=%zu: %zu wrong, first at %zu: got %g want %g",
                  op == HVD_SUM ? "SUM" : "AVERAGE", tp < k ? "default" : "ring", n, bad, first, n ? b[first] : 0.0,
                  n ? sum_val(first, size) / (op == HVD_AVERAGE ? size : 1) : 0.0);
        expect_identical_across_ranks(b, n, op == HVD_SUM ? "SUM" : "AVERAGE");
        free(b);
    }
    allreduce_force_path(ALLREDUCE_AUTO);
    CK_AGREE();
}

START_TEST(allreduce_sum) { check_allreduce(HVD_SUM); }
END_TEST

START_TEST(allreduce_average) { check_allreduce(HVD_AVERAGE); }
END_TEST

START_TEST(allreduce_many_segments_and_blocks)
{
    /* The defaults put one segment in each block; these tunings make chunks of many segments
     * (neighbours' chunks one element, hence one segment, apart), many blocks, and both. */
    const size_t tunings[][2] = {{4 << 10, (size_t)1 << 30}, {4 << 10, 64 << 10}, {64 << 10, 4 << 10}};
    const size_t lens[] = {2 * 1024 * 40 + 1, 1000003};
    int size = hvd_size();
    allreduce_force_path(ALLREDUCE_RING); /* not the shared window of one host */
    for (size_t t = 0; t < 3; t++) {
        ring_set_tuning(tunings[t][0], tunings[t][1]);
        for (size_t l = 0; l < 2; l++) {
            size_t n = lens[l], bad = 0;
            float *b = filled(n, hvd_rank());
            hvd_allreduce(b, n, HVD_SUM, "tuned");
            for (size_t i = 0; i < n; i++)
                bad += b[i] != sum_val(i, size);
            CK_EXPECT(bad == 0, "segment %zu block %zu n=%zu: %zu wrong", tunings[t][0],
                      tunings[t][1], n, bad);
            free(b);
        }
    }
    ring_set_tuning(0, 0);
    allreduce_force_path(ALLREDUCE_AUTO);
    CK_AGREE();
}
END_TEST

START_TEST(allreduce_64mib)
{
    /* The size of a WideResNet-16-10 gradient, in one tensor (larger than fusion's default). */
    size_t n = ((size_t)17 << 20) + 3;
    float *b = filled(n, hvd_rank());
    hvd_allreduce(b, n, HVD_SUM, "big");
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += b[i] != sum_val(i, hvd_size());
    CK_EXPECT(bad == 0, "68 MiB allreduce: %zu of %zu elements wrong", bad, n);
    free(b);
    CK_AGREE();
}
END_TEST

START_TEST(allreduce_fp16_within_tolerance)
{
    size_t n = 100003;
    int rank = hvd_rank(), size = hvd_size();
    float *b = malloc(n * sizeof *b);
    for (size_t i = 0; i < n; i++) /* mixed signs and magnitudes, rank-dependent */
        b[i] = ((float)((i * 2654435761u + (size_t)rank * 97) % 20001) - 10000.0f) * 1e-4f;
    hvd_allreduce_ex(b, n, HVD_AVERAGE, "fp16", HVD_COMPRESS_FP16);
    double worst = 0;
    size_t exact = 0;
    for (size_t i = 0; i < n; i++) {
        double want = 0;
        for (int r = 0; r < size; r++)
            want += ((double)((i * 2654435761u + (size_t)r * 97) % 20001) - 10000.0) * 1e-4;
        want /= size;
        double err = b[i] - want;
        err = err < 0 ? -err : err;
        worst = err > worst ? err : worst;
        exact += err == 0;
    }
    /* half has 11 significant bits: each rounding costs <= 2^-11 relative of values <= 1 */
    CK_EXPECT(worst <= 2e-3, "fp16 average: worst error %g > 2e-3", worst);
    expect_identical_across_ranks(b, n, "fp16 AVERAGE");
    if (size > 1) /* the payload really travelled as half: not everything can be exact */
        CK_EXPECT(exact < n, "fp16 average: all %zu values exact, compression not applied", n);
    free(b);
    CK_AGREE();
}
END_TEST

START_TEST(broadcast_every_root)
{
    int rank = hvd_rank(), size = hvd_size();
    size_t lens[] = {0, 1, 1001, 300007};
    for (int root = 0; root < size; root++) {
        for (size_t t = 0; t < sizeof lens / sizeof *lens; t++) {
            size_t n = lens[t];
            float *b = filled(n, rank);
            hvd_broadcast(b, n, root, "bcast");
            size_t bad = 0;
            for (size_t i = 0; i < n; i++)
                bad += b[i] != val(i, root);
            CK_EXPECT(bad == 0, "broadcast root %d n=%zu: %zu wrong", root, n, bad);
            free(b);
        }
        char bytes[37];
        snprintf(bytes, sizeof bytes, "from rank %d of %d", rank, size);
        hvd_broadcast_bytes(bytes, sizeof bytes, root, "bytes");
        char want[37];
        snprintf(want, sizeof want, "from rank %d of %d", root, size);
        CK_EXPECT(strcmp(bytes, want) == 0, "byte broadcast root %d: got \"%s\"", root, bytes);
    }
    CK_AGREE();
}
END_TEST

START_TEST(allgather_uneven)
{
    int rank = hvd_rank(), size = hvd_size();
    /* rank r contributes 3r elements: rank 0 none at all */
    size_t n = (size_t)(3 * rank);
    float *mine = malloc((n ? n : 1) * sizeof *mine);
    for (size_t i = 0; i < n; i++)
        mine[i] = (float)(rank * 1000 + (int)i);
    size_t total = 0, counts[16];
    float *all = hvd_allgather(mine, n, &total, counts, "gather");
    size_t want_total = (size_t)(3 * size * (size - 1) / 2);
    CK_EXPECT(total == want_total, "allgather total %zu, want %zu", total, want_total);
    size_t o = 0, bad = 0;
    for (int r = 0; r < size && total == want_total; r++) {
        CK_EXPECT(counts[r] == (size_t)(3 * r), "count of rank %d: %zu", r, counts[r]);
        for (int i = 0; i < 3 * r; i++)
            bad += all[o++] != (float)(r * 1000 + i);
    }
    CK_EXPECT(bad == 0, "allgather: %zu values out of place", bad);
    free(all);
    free(mine);
    CK_AGREE();
}
END_TEST

START_TEST(world_queries)
{
    int size = hvd_size(), rank = hvd_rank();
    CK_EXPECT(rank >= 0 && rank < size, "rank %d outside [0, %d)", rank, size);
    CK_EXPECT(hvd_local_size() >= 1 && hvd_local_size() <= size, "local size %d",
              hvd_local_size());
    CK_EXPECT(hvd_local_rank() >= 0 && hvd_local_rank() < hvd_local_size(), "local rank %d",
              hvd_local_rank());
    /* The ranks of my node are those with my host name (one node under plain mpirun, several
     * under tests/multinode/): local size = how many, local rank = my place among them. */
    char name[HOST_NAME_LEN] = {0}, *names = calloc((size_t)size, HOST_NAME_LEN);
    gethostname(name, sizeof name - 1);
    MPI_Allgather(name, HOST_NAME_LEN, MPI_CHAR, names, HOST_NAME_LEN, MPI_CHAR, MPI_COMM_WORLD);
    int same = 0, before = 0;
    for (int r = 0; r < size; r++)
        if (strcmp(names + (size_t)r * HOST_NAME_LEN, name) == 0) {
            same++;
            before += r < rank;
        }
    free(names);
    CK_EXPECT(hvd_local_size() == same, "rank %d on %s: local size %d, but %d ranks run there",
              rank, name, hvd_local_size(), same);
    CK_EXPECT(hvd_local_rank() == before, "rank %d on %s: local rank %d, want %d", rank, name,
              hvd_local_rank(), before);
    float r = (float)rank;
    hvd_allreduce(&r, 1, HVD_SUM, "ranks");
    CK_EXPECT(r == (float)(size * (size - 1) / 2), "ranks are not 0..size-1 (sum %g)", r);
    hvd_barrier();
    CK_AGREE();
}
END_TEST

START_TEST(pin_device_binds_own_cores)
{
    cpu_set_t before;
    sched_getaffinity(0, sizeof before, &before);
    device_binding b;
    hvd_pin_device(hvd_local_rank(), &b);
    cpu_set_t after;
    sched_getaffinity(0, sizeof after, &after);
    CK_EXPECT(b.backend == DEVICE_CPU, "backend %d on a machine without GPU", (int)b.backend);
    CK_EXPECT(CPU_COUNT(&after) == b.ncores, "bound to %d cores, reported %d", CPU_COUNT(&after),
              b.ncores);
    for (int i = 0; i < b.ncores; i++)
        CK_EXPECT(CPU_ISSET(b.cores[i], &after) && CPU_ISSET(b.cores[i], &before),
                  "core %d not in the allowed set", b.cores[i]);
    CK_EXPECT(openblas_get_num_threads() == b.blas_threads, "BLAS threads %d, binding says %d",
              openblas_get_num_threads(), b.blas_threads);
    sched_setaffinity(0, sizeof before, &before); /* leave the other tests unbound */
    CK_AGREE();
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("collectives");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, world_queries);
    tcase_add_test(tc, allreduce_sum);
    tcase_add_test(tc, allreduce_average);
    tcase_add_test(tc, allreduce_many_segments_and_blocks);
    tcase_add_test(tc, allreduce_64mib);
    tcase_add_test(tc, allreduce_fp16_within_tolerance);
    tcase_add_test(tc, broadcast_every_root);
    tcase_add_test(tc, allgather_uneven);
    tcase_add_test(tc, pin_device_binds_own_cores);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, make_suite(), 1); }
