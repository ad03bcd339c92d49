/* test_ckpt_resume.c — the lab's step 7 flow under mpirun -n 1..4 with the real model and SGD:
 * rank 0 saves; a new run (other random weights on every rank) has rank 0 find the latest epoch,
 * broadcasts it, rank 0 loads, parameters and optimizer state are broadcast; every rank must then
 * hold the saved bits, the dropout counter included, and continue exactly as the uninterrupted
 * run. Also a checkpoint of another model stops the scan (it would be overwritten) and is
 * refused by the load, naming both models. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fatal.h"
#include "ckpt/ckpt.h"
#include "hvd/hvd.h"
#include "lib/ck_mpi.h"
#include "lib/file_io.h"

enum { B = 4 };
static char dir[256];

/* One shared directory, made by rank 0. */
static void setup(void)
{
    if (hvd_rank() == 0) {
        snprintf(dir, sizeof dir, "/tmp/hvdlab-ckpt-resume-XXXXXX");
        if (!mkdtemp(dir))
            abort();
    }
    hvd_broadcast_bytes(dir, sizeof dir, 0, "test.dir");
}

static void teardown(void)
{
    hvd_barrier();
    if (hvd_rank() == 0) {
        DIR *dp = opendir(dir);
        for (struct dirent *de; dp && (de = readdir(dp));) {
            char p[600];
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                unlink(p); /* checkpoints, temp files, the lock file */
        }
        if (dp)
            closedir(dp);
        rmdir(dir);
    }
}

/* A batch that depends on the rank and the step (so averaging really mixes ranks). */
static void batch(float *x /* (B, 1, 28, 28) */, int *y /* (B) */, int rank, int step)
{
    for (int i = 0; i < B * 784; i++)
        x[i] = (float)((i * 37 + rank * 11 + step * 5) % 101) / 50.0f - 1.0f;
    for (int i = 0; i < B; i++)
        y[i] = (i + rank + step) % 10;
}

static void train(wrn_model *m, optimizer *opt, int step)
{
    float x[B * 784];
    int y[B];
    batch(x, y, hvd_rank(), step);
    opt->lr = 0.05f;
    wrn_train_batch(m, x, y, B, 5e-4f);
    optimizer_step(opt, wrn_params(m));
}

static wrn_model *make(int width, uint64_t seed, optimizer **opt)
{
    char err[256];
    /* no dropout: the two runs seed their masks apart */
    wrn_config cfg = {.depth = 10, .width = width, .dropout = 0.0f};
    wrn_model *m = wrn_create(&cfg, B, seed, err, sizeof err);
    if (!m)
        fatal_error("%s", err);
    *opt = hvd_distributed_optimizer(sgd_create(wrn_params(m), 0.05f, 0.9f));
    return m;
}

/* What a step program does at start-up with --use-checkpointing (the lines step 7 adds). */
static int resume(wrn_model *m, optimizer *opt, int epochs)
{
    char err[ERRMSG_LEN];
    int epoch = 0;
    if (hvd_rank() == 0 && (epoch = ckpt_latest_model(dir, m, opt, epochs, err, sizeof err)) < 0)
        fatal_error("%s", err);
    hvd_broadcast_bytes(&epoch, sizeof epoch, 0, "resume_epoch");
    if (epoch > 0) {
        if (hvd_rank() == 0 && ckpt_load_model(dir, epoch, m, opt, err, sizeof err))
            fatal_error("%s", err);
        hvd_broadcast_parameters(wrn_params(m), 0);
        hvd_broadcast_optimizer_state(opt, 0);
    }
    return epoch;
}

static int same(const float *a, const float *b, size_t n) { return !memcmp(a, b, n * sizeof *a); }

START_TEST(resume_on_every_rank_continues_exactly)
{
    optimizer *oa, *ob;
    wrn_model *a = make(1, 100 + (uint64_t)hvd_rank(), &oa);
    param_set *pa = wrn_params(a);
    CK_EXPECT(resume(a, oa, 5) == 0, "empty log dir: nothing to resume");
    hvd_broadcast_parameters(pa, 0);
    hvd_broadcast_optimizer_state(oa, 0);
    train(a, oa, 0);
    train(a, oa, 1);
    char err[ERRMSG_LEN];
    if (hvd_rank() == 0)
        CK_EXPECT(ckpt_save_model(dir, 1, a, oa, err, sizeof err) == 0, "%s", err);
    /* a new run: every rank starts from its own random weights */
    wrn_model *b = make(1, 200 + (uint64_t)hvd_rank(), &ob);
    param_set *pb = wrn_params(b);
    CK_EXPECT(!same(pa->params, pb->params, pa->n), "fresh weights equal the trained ones");
    int e = resume(b, ob, 5);
    CK_EXPECT(e == 1, "rank %d resumes at epoch %d, want 1", hvd_rank(), e);
    CK_EXPECT(same(pa->params, pb->params, pa->n), "rank %d: params differ after resume",
              hvd_rank());
    /* BN running statistics are per rank (Horovod does not average them): all ranks get rank 0's */
    float *state0 = malloc(pa->n_state * sizeof *state0);
    memcpy(state0, pa->state, pa->n_state * sizeof *state0);
    hvd_broadcast(state0, pa->n_state, 0, "test.state0");
    CK_EXPECT(same(state0, pb->state, pa->n_state), "rank %d: BN state differs from rank 0's",
              hvd_rank());
    free(state0);
    CK_EXPECT(same(oa->state, ob->state, oa->n_state), "rank %d: momentum differs", hvd_rank());
    CK_EXPECT(ob->iterations == 2 && ob->last_lr == oa->last_lr, "rank %d: iterations %ld",
              hvd_rank(), ob->iterations);
    CK_EXPECT(pb->steps == 2, "rank %d: dropout counter %llu after resume, want 2", hvd_rank(),
              (unsigned long long)pb->steps);
    /* the resumed run continues bit for bit like the uninterrupted one */
    train(a, oa, 2);
    train(b, ob, 2);
    CK_EXPECT(same(pa->params, pb->params, pa->n), "rank %d: one step after resume differs",
              hvd_rank());
    /* only rank 0 wrote, and only the one file */
    if (hvd_rank() == 0) {
        int n = 0;
        DIR *dp = opendir(dir);
        for (struct dirent *de; dp && (de = readdir(dp));)
            n += de->d_name[0] != '.';
        closedir(dp);
        CK_EXPECT(n == 1, "%d files in the log dir, want checkpoint-1.ckpt only", n);
    }
    optimizer_free(oa);
    optimizer_free(ob);
    wrn_free(a);
    wrn_free(b);
    CK_AGREE();
}
END_TEST

START_TEST(other_model_stops_the_scan_and_is_refused)
{
    optimizer *o1, *o2;
    wrn_model *m1 = make(1, 5, &o1), *m2 = make(2, 6, &o2);
    char err[ERRMSG_LEN], want[ERRMSG_LEN + 300];
    if (hvd_rank() == 0) {
        CK_EXPECT(ckpt_save_model(dir, 3, m1, o1, err, sizeof err) == 0, "%s", err);
        /* the scan stops for wrn-10-2: resuming nothing would overwrite the file */
        fflush(stderr);
        int saved = dup(2);
        char cap[300];
        snprintf(cap, sizeof cap, "%s/.capture", dir);
        int fd = open(cap, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 2);
        close(fd);
        int e = ckpt_latest_model(dir, m2, o2, 0, err, sizeof err);
        fflush(stderr);
        dup2(saved, 2);
        close(saved);
        char *out = file_read(cap, NULL);
        CK_EXPECT(out != NULL, "cannot read %s", cap);
        unlink(cap);
        CK_EXPECT(e == -1, "latest %d for another model", e);
        CK_EXPECT(out && !strcmp(out, ""), "stderr: %s", out ? out : "(none)");
        snprintf(want, sizeof want, "%s/checkpoint-3.ckpt: checkpoint of model wrn-10-1 (depth 10,"
                 " width 1), but this run builds wrn-10-2 (depth 10, width 2); " CKPT_WAYS_ON, dir);
        CK_EXPECT(!strcmp(err, want), "message: %s", err);
        free(out);
        /* loading it anyway is refused, and leaves the model as it was */
        uint64_t before = params_checksum(wrn_params(m2)->params, wrn_params(m2)->n);
        CK_EXPECT(ckpt_load_model(dir, 3, m2, o2, err, sizeof err) == -1, "loaded another model");
        snprintf(want, sizeof want, "%s/checkpoint-3.ckpt: checkpoint of model wrn-10-1 (depth 10,"
                 " width 1), but this run builds wrn-10-2 (depth 10, width 2)", dir);
        CK_EXPECT(!strcmp(err, want), "message: %s", err);
        CK_EXPECT(params_checksum(wrn_params(m2)->params, wrn_params(m2)->n) == before,
                  "a refused load changed the weights");
    }
    optimizer_free(o1);
    optimizer_free(o2);
    wrn_free(m1);
    wrn_free(m2);
    CK_AGREE();
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("ckpt_resume");
    TCase *tc = tcase_create("ckpt_resume");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, resume_on_every_rank_continues_exactly);
    tcase_add_test(tc, other_model_stops_the_scan_and_is_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, make_suite(), 1); }
