/* test_ringmodel.c — the alpha-beta fit of tools/ringmodel recovers the alpha and beta that made
 * synthetic ring timings, within 5 %, with +-3 % noise on every time, at W = 2 and W = 8. */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/ck_mpi.h"

static char tool[1024];

static void check_fit(int w, double alpha, double beta)
{
    char path[] = "/tmp/hvdlab-ringfit-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    int k = 0;
    for (double s = 4096; s <= 256.0 * (1 << 20); s *= 2, k++) {
        double t = 2.0 * (w - 1) * alpha + 2.0 * (w - 1) / w * s * beta;
        fprintf(f, "%.0f %.9g\n", s, t * (k % 3 == 0 ? 1.03 : k % 3 == 1 ? 0.97 : 1.0));
    }
    fclose(f);
    char cmd[2200];
    snprintf(cmd, sizeof cmd, "%s fit %s --ranks %d", tool, path, w);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    double a = -1, b = -1;
    char line[256];
    while (fgets(line, sizeof line, p)) {
        sscanf(line, "alpha_s %lf", &a);
        sscanf(line, "beta_s_per_byte %lf", &b);
    }
    ck_assert_int_eq(pclose(p), 0);
    unlink(path);
    ck_assert_msg(a > 0.95 * alpha && a < 1.05 * alpha, "W=%d: alpha %g, made with %g", w, a,
                  alpha);
    ck_assert_msg(b > 0.95 * beta && b < 1.05 * beta, "W=%d: beta %g, made with %g", w, b, beta);
}

START_TEST(fit_recovers_two_ranks) { check_fit(2, 20e-6, 1 / 5e9); }
END_TEST

START_TEST(fit_recovers_eight_ranks) { check_fit(8, 3e-6, 1 / 23e9); }
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("ringmodel");
    TCase *tc = tcase_create("ringmodel");
    tcase_add_test(tc, fit_recovers_two_ranks);
    tcase_add_test(tc, fit_recovers_eight_ranks);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    char self[1024];
    snprintf(self, sizeof self, "%s", argv[0]);
    /* build/tests/unit/test_ringmodel -> build/tools/ringmodel */
    snprintf(tool, sizeof tool, "%s/tools/ringmodel", dirname(dirname(dirname(self))));
    return ck_mpi_main(argc, argv, make_suite(), 0);
}
