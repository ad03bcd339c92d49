/* test_timeline.c — HVD_TIMELINE / hvd_start_timeline under mpirun -n 1..4: the trace is valid
 * JSON after every collective and holds Horovod's activities for each tensor. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/memory.h"
#include "coll/allreduce.h"
#include "hvd/hvd.h"
#include "lib/ck_mpi.h"
#include "lib/file_io.h"
#include "lib/json_check.h"
#include "prof/timeline.h"

static char path[256];

/* Rank 0 checks that the file is valid JSON right now. */
static void expect_valid(const char *when)
{
    if (hvd_rank() != 0)
        return;
    size_t len = 0, where = 0;
    char *text = file_read(path, &len);
    CK_EXPECT(text != NULL, "%s: cannot read %s", when, path);
    if (text) {
        CK_EXPECT(json_validate(text, len, &where) == 0, "%s: invalid JSON at byte %zu of %zu",
                  when, where, len);
        free(text);
    }
}

static size_t count(const char *text, const char *name)
{
    char needle[128];
    snprintf(needle, sizeof needle, "\"name\": \"%s\"", name);
    return json_count(text, needle);
}

/* Every rank writes to rank 0's fresh temporary path (in `path`). */
static void start_timeline_in_tmp(int rank)
{
    if (rank == 0) {
        char dir[] = "/tmp/hvdlab-timeline-XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/timeline.json", dir);
    }
    hvd_broadcast_bytes(path, sizeof path, 0, "path");
    hvd_start_timeline(path);
}

START_TEST(trace_is_valid_and_complete)
{
    int rank = hvd_rank();
    start_timeline_in_tmp(rank);
    expect_valid("empty timeline");

    float flat[30], a[5], b[7], w[4];
    for (int i = 0; i < 30; i++)
        flat[i] = (float)(i + rank);
    for (int i = 0; i < 5; i++)
        a[i] = (float)i;
    for (int i = 0; i < 7; i++)
        b[i] = (float)-i;
    /* three contiguous tensors: fused in place, no fusion-buffer copies */
    hvd_allreduce_async(flat, 10, HVD_AVERAGE, "grad/a", HVD_COMPRESS_NONE);
    hvd_allreduce_async(flat + 10, 10, HVD_AVERAGE, "grad/b", HVD_COMPRESS_NONE);
    hvd_allreduce_async(flat + 20, 10, HVD_AVERAGE, "grad/c", HVD_COMPRESS_NONE);
    hvd_synchronize();
    expect_valid("after fused contiguous allreduce");
    /* two scattered tensors: copied through the fusion buffer */
    hvd_allreduce_async(a, 5, HVD_SUM, "scattered/x", HVD_COMPRESS_NONE);
    hvd_allreduce_async(b, 7, HVD_SUM, "scattered/\"quoted\\name\"", HVD_COMPRESS_NONE);
    hvd_synchronize();
    expect_valid("after fused scattered allreduce");
    hvd_broadcast(w, 4, 0, "weights");
    expect_valid("after broadcast");
    hvd_stop_timeline();

    if (rank == 0) {
        size_t len = 0;
        char *t = file_read(path, &len);
        ck_assert_ptr_nonnull(t);
        CK_EXPECT(count(t, "process_name") == 6, "%zu tensors named, 6 used",
                  count(t, "process_name"));
        CK_EXPECT(count(t, "NEGOTIATE_ALLREDUCE") == 5, "NEGOTIATE_ALLREDUCE x%zu, 5 tensors",
                  count(t, "NEGOTIATE_ALLREDUCE"));
        CK_EXPECT(count(t, "ALLREDUCE") == 5, "ALLREDUCE x%zu", count(t, "ALLREDUCE"));
        /* the pass itself: the ring's MPI_ALLREDUCE, or SHM_ALLREDUCE where every rank shares
         * one host (coll/allreduce.h); these tensors are small, one path for all */
        const char *pass =
            allreduce_choice(NULL, 64) == ALLREDUCE_SHM ? "SHM_ALLREDUCE" : "MPI_ALLREDUCE";
        CK_EXPECT(count(t, pass) == 5, "%s x%zu", pass, count(t, pass));
        CK_EXPECT(count(t, "MEMCPY_IN_FUSION_BUFFER") == 2 &&
                      count(t, "MEMCPY_OUT_FUSION_BUFFER") == 2,
                  "fusion-buffer copies: in x%zu out x%zu, expected 2 each (scattered only)",
                  count(t, "MEMCPY_IN_FUSION_BUFFER"), count(t, "MEMCPY_OUT_FUSION_BUFFER"));
        CK_EXPECT(count(t, "BROADCAST") == 1, "BROADCAST x%zu", count(t, "BROADCAST"));
        /* per tensor NEGOTIATE, ALLREDUCE, its pass; scattered ones two copies; bcast */
        size_t nb = json_count(t, "\"ph\": \"B\""), ne = json_count(t, "\"ph\": \"E\"");
        CK_EXPECT(nb == ne && nb == 5 * 3 + 2 * 2 + 1, "begin %zu / end %zu events", nb, ne);
        free(t);
        unlink(path);
        *strrchr(path, '/') = '\0';
        rmdir(path);
    }
    CK_AGREE();
}
END_TEST

/* The single-copy pass has its own name (tools/timeline_plot.py knows it): one buffer of the
 * kit's (huge pages) forced onto it. Where the host forbids the copy (coll/cma.h) the shared
 * window runs instead, under its own name; with one rank the ring of one. */
START_TEST(single_copy_pass_is_named)
{
    int rank = hvd_rank(), size = hvd_size();
    start_timeline_in_tmp(rank);
    size_t n = 100000;
    float *g = memory_alloc(n * sizeof *g);
    for (size_t i = 0; i < n; i++)
        g[i] = (float)(i % 7 + (size_t)rank);
    allreduce_force_path(ALLREDUCE_CMA);
    hvd_allreduce(g, n, HVD_SUM, "grad/big");
    allreduce_force_path(ALLREDUCE_AUTO);
    hvd_stop_timeline();
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += g[i] != (float)((i % 7) * (size_t)size + (size_t)(size * (size - 1) / 2));
    CK_EXPECT(bad == 0, "%zu of %zu wrong", bad, n);
    memory_free(g);
    if (rank == 0) {
        size_t len = 0;
        char *t = file_read(path, &len);
        ck_assert_ptr_nonnull(t);
        size_t cma = count(t, "CMA_ALLREDUCE"), shm = count(t, "SHM_ALLREDUCE"),
               ring = count(t, "MPI_ALLREDUCE");
        CK_EXPECT(size == 1 ? ring == 1 && cma + shm == 0 : cma + shm == 1 && ring == 0,
                  "passes: CMA_ALLREDUCE x%zu, SHM_ALLREDUCE x%zu, MPI_ALLREDUCE x%zu", cma, shm,
                  ring);
        size_t nb = json_count(t, "\"ph\": \"B\""), ne = json_count(t, "\"ph\": \"E\"");
        CK_EXPECT(nb == ne && nb == 3, "begin %zu / end %zu events", nb, ne);
        free(t);
        unlink(path);
        *strrchr(path, '/') = '\0';
        rmdir(path);
    }
    CK_AGREE();
}
END_TEST

/* A full disk stops the trace with a warning, and the file keeps the events written before it:
 * still valid JSON (the failed write once left half an event after the closing bracket's place).
 * Rank 0's file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored) stands in for the full disk. */
START_TEST(full_disk_leaves_valid_json)
{
    int rank = hvd_rank();
    start_timeline_in_tmp(rank);
    struct rlimit old, small;
    void (*old_xfsz)(int) = SIG_DFL;
    if (rank == 0) {
        ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
        small = old;
        small.rlim_cur = 4000;
        old_xfsz = signal(SIGXFSZ, SIG_IGN);
        ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
    }
    float x[4] = {1, 2, 3, 4};
    char name[64];
    for (int i = 0; i < 100; i++) { /* about 300 bytes of events each: the limit at ~13 */
        snprintf(name, sizeof name, "fill/tensor-%d", i);
        hvd_allreduce(x, 4, HVD_SUM, name);
    }
    if (rank == 0) {
        int still = timeline_enabled();
        ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
        signal(SIGXFSZ, old_xfsz);
        CK_EXPECT(!still, "the timeline still writes past a 4000-byte file-size limit");
    }
    expect_valid("after the disk filled up");
    hvd_stop_timeline();
    if (rank == 0) {
        size_t len = 0;
        char *t = file_read(path, &len);
        ck_assert_ptr_nonnull(t);
        CK_EXPECT(len <= 4000 && count(t, "process_name") >= 1, "%zu bytes, %zu tensors named",
                  len, count(t, "process_name"));
        free(t);
        unlink(path);
        *strrchr(path, '/') = '\0';
        rmdir(path);
    }
    CK_AGREE();
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("timeline");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, trace_is_valid_and_complete);
    tcase_add_test(tc, single_copy_pass_is_named);
    tcase_add_test(tc, full_disk_leaves_valid_json);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, make_suite(), 1); }
