/* test_lab_agree.c — ranks that would train on different epochs stop at start with one line
 * naming what differs and the ranks: another file on one rank (MPMD launch with two --data-dir),
 * another data set size, another --batch-size or --seed; and another --base-lr, --model or
 * --epochs, which change how the ranks train (a drift unseen, or a hang). Tiny IDX data sets
 * are written here; prog_lab_data runs under a child mpirun. Serial itself. */
#include <check.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/ck_mpi.h"
#include "lib/mpi_job.h"
#include "lib/tmpdir.h"

static char prog[1024];

static void put_be32(FILE *f, uint32_t v)
{
    unsigned char b[4] = {v >> 24, v >> 16, v >> 8, v};
    fwrite(b, 1, 4, f);
}

/* One IDX file: n images of 28x28 (labels = 0) or n labels, values from seed; `bump` changes
 * one byte of the payload. */
static void write_idx(const char *path, int images, uint32_t n, int bump)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    put_be32(f, images ? 0x803 : 0x801);
    put_be32(f, n);
    size_t per = 1;
    if (images) {
        put_be32(f, 28);
        put_be32(f, 28);
        per = 784;
    }
    for (size_t i = 0; i < n * per; i++)
        fputc((int)((i * 7 + (i == 3 ? (size_t)bump : 0)) % (images ? 256 : 10)), f);
    fclose(f);
}

/* A data set in tmp_dir/name: n_train training and 4 test images; bump_test_labels changes one
 * test label. */
static const char *make_data(const char *name, uint32_t n_train, int bump_test_labels)
{
    const char *dir = tmp_path(name);
    static char keep[4][512];
    static int k;
    char *d = keep[k++ % 4];
    snprintf(d, 512, "%s", dir);
    mkdir(d, 0755);
    char p[600];
    snprintf(p, sizeof p, "%s/train-images-idx3-ubyte", d);
    write_idx(p, 1, n_train, 0);
    snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte", d);
    write_idx(p, 0, n_train, 0);
    snprintf(p, sizeof p, "%s/t10k-images-idx3-ubyte", d);
    write_idx(p, 1, 4, 0);
    snprintf(p, sizeof p, "%s/t10k-labels-idx1-ubyte", d);
    write_idx(p, 0, 4, bump_test_labels);
    return d;
}

#define FLAGS "--train-subset 8 --test-subset 4 --batch-size 2 --val-batch-size 2"

/* An MPMD launch: n0 ranks with --data-dir dir0 and flags0, then n1 with dir1 and flags1. */
static mpi_job *run(int n0, const char *dir0, const char *flags0, int n1, const char *dir1,
                    const char *flags1)
{
    char launch[4096];
    snprintf(launch, sizeof launch, "-n %d %s --data-dir %s " FLAGS " %s : -n %d %s --data-dir %s "
             FLAGS " %s", n0, prog, dir0, flags0, n1, prog, dir1, flags1);
    return mpi_job_run("", launch);
}

/* Stopped with `line` (on one rank or each) and no other error line, before any training. */
static void expect_stop(mpi_job *j, const char *line)
{
    ck_assert_msg(j->status != 124, "the job hung\n%s", j->out);
    ck_assert_msg(j->status != 0, "exit status 0, expected a stop\n%s", j->out);
    size_t lines = mpi_job_count(j, "hvdlab: error:"), named = mpi_job_count(j, line);
    ck_assert_msg(named >= 1, "missing line\n  %s\nin output:\n%s", line, j->out);
    ck_assert_msg(lines == named, "%zu error lines, %zu the expected one\n%s", lines, named,
                  j->out);
    ck_assert_msg(!strstr(j->out, "prog_lab_data: agreed"), "the ranks went on\n%s", j->out);
    mpi_job_free(j);
}

START_TEST(same_data_goes_on)
{
    const char *a = make_data("a", 8, 0);
    mpi_job *j = run(1, a, "", 2, a, "");
    ck_assert_msg(j->status == 0 && strstr(j->out, "prog_lab_data: agreed"), "status %d\n%s",
                  j->status, j->out);
    mpi_job_free(j);
}
END_TEST

START_TEST(one_changed_file_is_named)
{
    const char *a = make_data("a", 8, 0), *b = make_data("b", 8, 1);
    mpi_job *j = run(1, a, "", 1, b, "");
    ck_assert_msg(strstr(j->out, "] the ranks disagree on the data that defines an epoch: the "
                                 "fingerprint of t10k-labels-idx1-ubyte is ") &&
                      strstr(j->out, " on rank 0 but ") && strstr(j->out, " on rank 1 (data from "),
                  "%s", j->out);
    char line[2048];
    snprintf(line, sizeof line, " (data from %s on rank 0, %s on rank 1); every rank must read "
             "the same four files\n", a, b);
    expect_stop(j, line);
}
END_TEST

START_TEST(another_size_names_the_ranks)
{
    const char *a = make_data("a", 8, 0), *c = make_data("c", 10, 0);
    mpi_job *j = run(2, a, "", 1, c, "");
    expect_stop(j, "] the ranks disagree on the data that defines an epoch: the training set "
                   "size is 8 on ranks 0, 1 but 10 on rank 2 (data from ");
}
END_TEST

START_TEST(another_batch_size_is_named)
{
    const char *a = make_data("a", 8, 0);
    mpi_job *j = run(1, a, "", 1, a, "--batch-size 4");
    expect_stop(j, "] the ranks disagree on the data that defines an epoch: --batch-size is 2 on "
                   "rank 0 but 4 on rank 1; every rank must be given the same --batch-size\n");
}
END_TEST

START_TEST(another_seed_is_named)
{
    const char *a = make_data("a", 8, 0);
    mpi_job *j = run(1, a, "--seed 1", 1, a, "");
    expect_stop(j, ": --seed is 1 on rank 0 but 42 on rank 1; every rank must be given the same "
                   "--seed\n");
}
END_TEST

/* The flags that do not change the epoch: another learning rate trained on unseen, the ranks'
 * weights drifting apart (the averaged gradients applied at two rates); another --epochs or
 * --model hung in the first collective the ranks did not share. */
START_TEST(another_learning_rate_is_named)
{
    const char *a = make_data("a", 8, 0);
    mpi_job *j = run(1, a, "", 2, a, "--base-lr 0.05");
    expect_stop(j, "] the ranks disagree on how to train: --base-lr is 0.01 on rank 0 but 0.05 on "
                   "ranks 1, 2; every rank must be given the same --base-lr\n");
}
END_TEST

START_TEST(another_model_or_epochs_is_named)
{
    const char *a = make_data("a", 8, 0);
    mpi_job *j = run(1, a, "--model wrn-16-2", 1, a, "");
    expect_stop(j, "] the ranks disagree on how to train: --model is wrn-16-2 on rank 0 but "
                   "wrn-16-1 on rank 1; every rank must be given the same --model\n");
    j = run(1, a, "", 1, a, "--epochs 2 --momentum 0.5");
    expect_stop(j, "] the ranks disagree on how to train: --epochs is 3 on rank 0 but 2 on rank "
                   "1; every rank must be given the same --epochs\n");
    /* --dropout is a float: shown as typed, not as the double it widens to (0.300000012) */
    j = run(1, a, "--dropout 0.3", 1, a, "");
    expect_stop(j, "] the ranks disagree on how to train: --dropout is 0.3 on rank 0 but 0.01 on "
                   "rank 1; every rank must be given the same --dropout\n");
}
END_TEST

/* --restart reaches the checkpoints through rank 0 alone: given to another rank only, it was
 * ignored and the run resumed what it was asked to set aside. Compared before anything moves. */
START_TEST(restart_on_one_rank_is_named)
{
    const char *a = make_data("a", 8, 0);
    mpi_job *j = run(1, a, "--use-checkpointing", 1, a, "--use-checkpointing --restart");
    expect_stop(j, "] the ranks disagree on how to train: --restart (0 off, 1 on) is 0 on rank 0 "
                   "but 1 on rank 1; every rank must be given the same --restart (0 off, 1 on)\n");
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("lab_agree");
    TCase *tc = tcase_create("data");
    tcase_add_unchecked_fixture(tc, tmp_suite_setup, tmp_suite_teardown);
    tcase_add_checked_fixture(tc, tmp_test_setup, tmp_test_teardown);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, same_data_goes_on);
    tcase_add_test(tc, one_changed_file_is_named);
    tcase_add_test(tc, another_size_names_the_ranks);
    tcase_add_test(tc, another_batch_size_is_named);
    tcase_add_test(tc, another_seed_is_named);
    tcase_add_test(tc, another_learning_rate_is_named);
    tcase_add_test(tc, another_model_or_epochs_is_named);
    tcase_add_test(tc, restart_on_one_rank_is_named);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    char self[1024];
    snprintf(self, sizeof self, "%s", argv[0]);
    snprintf(prog, sizeof prog, "%s/../progs/prog_lab_data", dirname(self));
    return ck_mpi_main(argc, argv, make_suite(), 0);
}
