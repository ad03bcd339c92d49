/* test_layer_prof.c — layer_prof.h's clock of marks (what the GPU profile times with, CUDA
 * events in nn/gpu_marks.cu) on a fake clock: mark k is at k*k ms (or k ms), so a pair taken
 * from the wrong marks gives another sum. Nested timed statements, the calls counted at once
 * and the seconds at lprof_flush; more pairs than the pending table holds with a statement still
 * open (its start mark must outlive the table's settling: no release before the flush); and
 * back to the wall clock with lprof_set_clock(NULL). */
#include <stdio.h>
#include <string.h>

#include "lib/ck_mpi.h"
#include "nn/layer_prof.h"

static int used, releases, bad_pairs, squares = 1;

static int fake_mark(void) { return used++; }
static double at(int k) { return (squares ? (double)k * k : (double)k) * 1e-3; }
static double fake_seconds(int a, int b)
{
    if (a < 0 || b < 0 || a >= used || b >= used || a > b)
        bad_pairs++;
    return at(b) - at(a);
}
static void fake_release(void)
{
    used = 0;
    releases++;
}
static const lprof_clock fake = {fake_mark, fake_seconds, fake_release};

/* name's seconds and calls, or -1 seconds when it is not in the table. */
static double seconds_of(const char *name, long *calls)
{
    for (int i = 0; i < lprof_count(); i++) {
        const char *n;
        double s;
        lprof_entry(i, &n, &s, calls);
        if (!strcmp(n, name))
            return s;
    }
    *calls = 0;
    return -1.0;
}

#define NEAR(x, want) ((x) > (want) - 1e-9 && (x) < (want) + 1e-9)

START_TEST(nested_pairs_add_up)
{
    used = releases = bad_pairs = 0;
    squares = 1;
    lprof_reset();
    lprof_set_clock(&fake);
    lprof_enable(1);
    /* marks: outer 0, inner 1-2, inner 3-4, outer 5 */
    LPROF("outer", {
        LPROF("inner", (void)0);
        LPROF("inner", (void)0);
    });
    long calls = 0;
    CK_EXPECT(releases == 0, "released %d times before the flush", releases);
    lprof_flush();
    CK_EXPECT(releases == 1 && used == 0, "after the flush: %d releases, %d marks in use",
              releases, used);
    double s = seconds_of("inner", &calls);
    CK_EXPECT(NEAR(s, 0.010) && calls == 2, "inner: %g s in %ld calls, want 0.010 s in 2", s,
              calls);
    s = seconds_of("outer", &calls);
    CK_EXPECT(NEAR(s, 0.025) && calls == 1, "outer: %g s in %ld calls, want 0.025 s in 1", s,
              calls);
    CK_EXPECT(bad_pairs == 0, "%d pairs of marks that were not made", bad_pairs);
    /* a second round after the release: marks start again at 0 and the totals grow */
    LPROF("inner", (void)0); /* 0-1: 1 ms */
    s = seconds_of("inner", &calls); /* lprof_count flushes */
    CK_EXPECT(NEAR(s, 0.011) && calls == 3, "inner after a second round: %g s, %ld calls", s,
              calls);
    lprof_enable(0);
    lprof_set_clock(NULL);
    CK_AGREE();
}
END_TEST

START_TEST(more_pairs_than_the_table_with_one_open)
{
    used = releases = bad_pairs = 0;
    squares = 0; /* mark k at k ms */
    lprof_reset();
    lprof_set_clock(&fake);
    lprof_enable(1);
    enum { N = 5000 }; /* above layer_prof.c's 4096 pending pairs */
    const double t0 = lprof_start(); /* mark 0, open across the table's settling */
    for (int i = 0; i < N; i++)
        LPROF("inner", (void)0); /* 2i+1 .. 2i+2: 1 ms each */
    lprof_stop(t0, "outer"); /* mark 2N+1 */
    CK_EXPECT(releases == 0, "marks released while a statement was open (%d)", releases);
    lprof_flush();
    long calls = 0;
    double s = seconds_of("inner", &calls);
    CK_EXPECT(NEAR(s, N * 1e-3) && calls == N, "inner: %g s in %ld calls, want %g in %d", s,
              calls, N * 1e-3, N);
    s = seconds_of("outer", &calls);
    CK_EXPECT(NEAR(s, (2 * N + 1) * 1e-3), "outer: %g s, want %g", s, (2 * N + 1) * 1e-3);
    CK_EXPECT(bad_pairs == 0, "%d pairs of marks that were not made", bad_pairs);
    lprof_enable(0);
    lprof_set_clock(NULL);
    CK_AGREE();
}
END_TEST

START_TEST(without_a_clock_the_wall_clock)
{
    used = releases = 0;
    lprof_set_clock(NULL);
    lprof_reset();
    lprof_enable(1);
    LPROF("wall", (void)0);
    lprof_enable(0);
    long calls = 0;
    const double s = seconds_of("wall", &calls);
    CK_EXPECT(calls == 1 && s >= 0.0 && s < 1.0 && used == 0, "wall: %g s, %ld calls, %d marks",
              s, calls, used);
    CK_AGREE();
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("layer_prof");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, nested_pairs_add_up);
    tcase_add_test(tc, more_pairs_than_the_table_with_one_open);
    tcase_add_test(tc, without_a_clock_the_wall_clock);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, make_suite(), 0); }
