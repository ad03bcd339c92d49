/* test_ckpt_files.c — checkpoint files in a log directory: the newest valid epoch (skipping bad
 * files with one warning each), writers killed before the rename, creating the log directory,
 * one run at a time in it, the param_set layer and its trace lines. Serial (forked Check). The
 * format: test_ckpt.c. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "lib/ck_mpi.h"
#include "lib/ckpt_fixture.h"

char err[ERRMSG_LEN];

static void setup(void)
{
    tmp_test_setup();
    err[0] = '\0';
}

START_TEST(latest_skips_bad_files_with_one_warning_each)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", tmp_path("run"));
    ckpt_expect w;
    fixture f;
    ck_assert_int_eq(ckpt_latest_epoch(dir, NULL, 0, err, sizeof err), 0); /* no dir yet */
    ck_assert_int_eq(ckpt_mkdirs(dir, err, sizeof err), 0);
    ck_assert_int_eq(ckpt_latest_epoch(dir, NULL, 0, err, sizeof err), 0); /* an empty one */
    for (int e = 1; e <= 4; e++) {
        make_fixture(&f, e == 4 ? 22 : 10, 2, e); /* epoch 4 is another model */
        save(dir, &f);
    }
    make_fixture(&f, 10, 2, 1);
    w = expect_of(&f);
    /* noise the scan must ignore: a leftover temp file, other names, a newer file of another run */
    spit(tmp_path("run/.checkpoint-9.ckpt.tmp-abcdef"), "HVDLCKPT", 8);
    spit(tmp_path("run/checkpoint-07.ckpt"), "x", 1);
    spit(tmp_path("run/checkpoint-8.ckpt.bak"), "x", 1);
    spit(tmp_path("run/checkpoint-8.h5"), "x", 1);
    /* corrupt epoch 3 (one data byte) and truncate epoch 2 */
    size_t len;
    uint8_t *b = slurp(tmp_path("run/checkpoint-3.ckpt"), &len);
    b[DATA_AT + 5] ^= 0x10;
    spit(tmp_path("run/checkpoint-3.ckpt"), b, len);
    spit(tmp_path("run/checkpoint-2.ckpt"), b, len - 100);
    free(b);
    /* the newest, epoch 4, is another model's: the run would overwrite it, so it stops */
    int cap = capture_begin();
    int e = ckpt_latest_epoch(dir, &w, 10, err, sizeof err);
    char *out = capture_end(cap);
    char want[4096], crcs[64];
    ck_assert_int_eq(e, -1);
    ck_assert_str_eq(out, "");
    free(out);
    snprintf(want, sizeof want, "%s/checkpoint-4.ckpt: checkpoint of model wrn-22-2 (depth 22, "
             "width 2), but this run builds wrn-10-2 (depth 10, width 2); use another --log-dir, "
             "or --restart which moves the old files aside into a dated subfolder; nothing is "
             "deleted", dir);
    ck_assert_str_eq(err, want);
    /* below it (max_epoch 3): the damaged 3 and 2 are renamed aside, 1 is the newest valid */
    cap = capture_begin();
    e = ckpt_latest_epoch(dir, &w, 3, err, sizeof err);
    out = capture_end(cap);
    ck_assert_msg(e == 1, "latest %d: %s / %s", e, err, out);
    const char *c = strstr(out, "CRC32 ");
    ck_assert_ptr_nonnull(c);
    snprintf(crcs, sizeof crcs, "%.31s", c); /* "CRC32 xxxxxxxx stored, yyyyyyyy computed" */
    snprintf(want, sizeof want,
             "hvdlab: warning: %s/checkpoint-3.ckpt: corrupt checkpoint: %s computed; renamed to "
             "%s/checkpoint-3.ckpt.damaged, not overwritten\n"
             "hvdlab: warning: %s/checkpoint-2.ckpt: truncated checkpoint: %d bytes, its header "
             "says %d; renamed to %s/checkpoint-2.ckpt.damaged, not overwritten\n",
             dir, crcs, dir, dir, FILE_BYTES - 100, FILE_BYTES, dir);
    ck_assert_str_eq(out, want);
    free(out);
    ck_assert_int_eq(access(tmp_path("run/checkpoint-3.ckpt.damaged"), F_OK), 0);
    ck_assert_int_eq(access(tmp_path("run/checkpoint-2.ckpt.damaged"), F_OK), 0);
    /* max_epoch bounds the scan (the lab scans from --epochs down); files above it are not read */
    cap = capture_begin();
    e = ckpt_latest_epoch(dir, &w, 1, err, sizeof err);
    out = capture_end(cap);
    ck_assert_int_eq(e, 1);
    ck_assert_str_eq(out, "");
    free(out);
    /* without requirements the other model's epoch 4 is the newest valid file */
    ck_assert_int_eq(ckpt_latest_epoch(dir, NULL, 0, err, sizeof err), 4);
    /* nothing below 4 at all -> 0 */
    unlink(tmp_path("run/checkpoint-1.ckpt"));
    ck_assert_int_eq(ckpt_latest_epoch(dir, &w, 3, err, sizeof err), 0);
    /* every checkpoint damaged: renamed aside, and the run stops instead of starting afresh */
    spit(tmp_path("run/checkpoint-1.ckpt"), "HVDLCKPT", 8);
    cap = capture_begin();
    e = ckpt_latest_epoch(dir, &w, 3, err, sizeof err);
    free(capture_end(cap));
    ck_assert_int_eq(e, -1);
    snprintf(want, sizeof want, "%s: every checkpoint in it is damaged (renamed to *.damaged); "
             "use another --log-dir, or --restart which moves the old files aside into a dated "
             "subfolder; nothing is deleted", dir);
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(access(tmp_path("run/checkpoint-1.ckpt.damaged"), F_OK), 0);
    /* a path that is not a directory is an error, not "no checkpoint" */
    ck_assert_int_eq(ckpt_latest_epoch(tmp_path("run/checkpoint-8.h5"), &w, 0, err, sizeof err),
                     -1);
    snprintf(want, sizeof want, "%s: cannot list checkpoint directory: Not a directory",
             tmp_path("run/checkpoint-8.h5"));
    ck_assert_str_eq(err, want);
}
END_TEST

/* A FIFO under a checkpoint's name (left by a tool, or made by mistake) is set aside like any
 * other damaged file: opening it must not wait for a writer (rank 0 hung there, the other ranks
 * in the resume broadcast, with no stall shutdown by default). */
START_TEST(fifo_in_place_of_a_checkpoint_does_not_block)
{
    char dir[512], want[4096];
    snprintf(dir, sizeof dir, "%s", tmp_path("fifo"));
    fixture f;
    make_fixture(&f, 10, 2, 1);
    save(dir, &f);
    ckpt_expect w = expect_of(&f);
    ck_assert_int_eq(mkfifo(tmp_path("fifo/checkpoint-2.ckpt"), 0644), 0);
    alarm(10); /* a blocked open fails the test instead of hanging it */
    int cap = capture_begin();
    int e = ckpt_latest_epoch(dir, &w, 0, err, sizeof err);
    char *out = capture_end(cap);
    alarm(0);
    ck_assert_msg(e == 1, "latest %d: %s / %s", e, err, out);
    snprintf(want, sizeof want, "hvdlab: warning: %s/checkpoint-2.ckpt: not a regular file; "
             "renamed to %s/checkpoint-2.ckpt.damaged, not overwritten\n", dir, dir);
    ck_assert_str_eq(out, want);
    free(out);
    struct stat st;
    ck_assert_int_eq(lstat(tmp_path("fifo/checkpoint-2.ckpt.damaged"), &st), 0);
    ck_assert(S_ISFIFO(st.st_mode));
}
END_TEST

/* A file saved mid-epoch (on a signal) is checkpoint-E.B.ckpt: newer than checkpoint-E, older
 * than checkpoint-(E+1); when the scan picks it, loading epoch E reads it. */
START_TEST(mid_epoch_files_sort_between_epochs)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", tmp_path("mid"));
    fixture f;
    for (int e = 1; e <= 2; e++) {
        make_fixture(&f, 10, 1, e);
        save(dir, &f);
    }
    make_fixture(&f, 10, 1, 2);
    f.d.resume.batch = 17;
    f.params[0] = 42.0f;
    save(dir, &f);
    ck_assert_int_eq(access(tmp_path("mid/checkpoint-2.17.ckpt"), F_OK), 0);
    spit(tmp_path("mid/checkpoint-2.017.ckpt"), "x", 1); /* not a name the kit writes */
    ckpt_expect w = expect_of(&f);
    ck_assert_int_eq(ckpt_latest_epoch(dir, &w, 5, err, sizeof err), 2);
    ck_assert_int_eq(ckpt_found_batch(dir, 2), 17);
    ck_assert_int_eq(ckpt_found_batch(NULL, 2), 17);
    ck_assert_int_eq(ckpt_found_batch(dir, 1), 0);
    ckpt_file r;
    ck_assert_msg(ckpt_load(dir, 2, &w, &r, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(r.d.resume.batch, 17);
    ck_assert_float_eq(r.d.params[0], 42.0f);
    ckpt_file_free(&r);
    /* a run of 2 epochs never resumes past its end: the mid-epoch file of epoch 3 is not its */
    ck_assert_int_eq(ckpt_latest_epoch(dir, &w, 2, err, sizeof err), 2);
    ck_assert_int_eq(ckpt_found_batch(dir, 2), 0);
    /* a finished epoch 3 beats it */
    make_fixture(&f, 10, 1, 3);
    save(dir, &f);
    ck_assert_int_eq(ckpt_latest_epoch(dir, &w, 5, err, sizeof err), 3);
    ck_assert_int_eq(ckpt_found_batch(dir, 3), 0);
    /* a file that holds another batch than its name says is damaged */
    rename(tmp_path("mid/checkpoint-3.ckpt"), tmp_path("mid/checkpoint-3.4.ckpt"));
    int cap = capture_begin();
    ck_assert_int_eq(ckpt_latest_epoch(dir, &w, 5, err, sizeof err), 2);
    char *out = capture_end(cap);
    ck_assert_msg(strstr(out, "checkpoint holds epoch 3 batch 0, its name says epoch 3 batch 4; "
                              "renamed to") != NULL, "%s", out);
    free(out);
}
END_TEST

static int count_temp_files(const char *dir)
{
    DIR *dp = opendir(dir);
    int n = 0;
    for (struct dirent *de; dp && (de = readdir(dp));)
        n += strncmp(de->d_name, ".checkpoint-", 12) == 0;
    if (dp)
        closedir(dp);
    return n;
}

/* A writer stopped between write and rename (the split API, and a process killed there) leaves
 * the previous checkpoint as the latest; so does a writer killed at any moment. */
START_TEST(killed_writer_leaves_previous_checkpoint)
{
    fixture f;
    make_fixture(&f, 10, 1, 1);
    char dir[512];
    snprintf(dir, sizeof dir, "%s", tmp_path("k"));
    save(dir, &f);
    make_fixture(&f, 10, 1, 2);
    char tmp[4096];
    ck_assert_msg(ckpt_write_temp(dir, &f.d, tmp, sizeof tmp, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(ckpt_latest_epoch(dir, NULL, 0, err, sizeof err), 1);
    pid_t pid = fork();
    if (pid == 0) {
        char t2[4096];
        if (ckpt_write_temp(dir, &f.d, t2, sizeof t2, err, sizeof err) == 0)
            raise(SIGKILL); /* dies where a crash before the rename would */
        _exit(3);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "writer ended with status %#x", st);
    ck_assert_int_eq(count_temp_files(dir), 2);
    int cap = capture_begin();
    ck_assert_int_eq(ckpt_latest_epoch(dir, NULL, 0, err, sizeof err), 1);
    char *out = capture_end(cap);
    ck_assert_str_eq(out, ""); /* temp files are not even looked at */
    free(out);
    ck_assert_msg(ckpt_commit(dir, tmp, 2, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(ckpt_latest_epoch(dir, NULL, 0, err, sizeof err), 2);

    /* SIGKILL at growing delays into the save of a 8 MiB checkpoint */
    size_t big = 1u << 20;
    float *pbig = malloc(big * 4), *obig = malloc(big * 4);
    for (size_t i = 0; i < big; i++)
        pbig[i] = obig[i] = (float)i;
    param_view bv = view("w", 0, 1, (int[]){(int)big}, 1);
    ckpt_data d = {.cfg = {10, 1, 0}, .epoch = 2, .views = &bv, .nviews = 1, .params = pbig,
                   .n_params = big, .opt_state = obig, .n_opt_state = big};
    int delays_us[] = {0, 100, 300, 1000, 2000, 4000, 8000, 16000, 50000, 200000};
    int torn = 0, done = 0;
    for (int k = 0; k < (int)(sizeof delays_us / sizeof delays_us[0]); k++) {
        char sub[32];
        snprintf(sub, sizeof sub, "kill%d", k);
        char kd[512];
        snprintf(kd, sizeof kd, "%s", tmp_path(sub));
        d.epoch = 1;
        ck_assert_msg(ckpt_save(kd, &d, err, sizeof err) == 0, "%s", err);
        d.epoch = 2;
        pid = fork();
        if (pid == 0)
            _exit(ckpt_save(kd, &d, err, sizeof err) == 0 ? 0 : 3);
        usleep((useconds_t)delays_us[k]);
        kill(pid, SIGKILL);
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert_msg(WIFSIGNALED(st) || WEXITSTATUS(st) == 0, "save %d exited with %d", k,
                      WEXITSTATUS(st));
        cap = capture_begin();
        int e = ckpt_latest_epoch(kd, NULL, 0, err, sizeof err);
        out = capture_end(cap);
        ck_assert_msg(e == 1 || e == 2, "delay %d us: latest %d", delays_us[k], e);
        ck_assert_msg(out[0] == '\0', "delay %d us: %s", delays_us[k], out);
        free(out);
        torn += e == 1;
        done += e == 2;
    }
    fprintf(stderr, "killed_writer: %d saves killed before the rename, %d completed\n", torn, done);
    free(pbig);
    free(obig);
}
END_TEST

START_TEST(creates_log_dir_or_names_it)
{
    fixture f;
    make_fixture(&f, 10, 1, 1);
    save(tmp_path("a/b/c/"), &f);
    ck_assert_int_eq(access(tmp_path("a/b/c/checkpoint-1.ckpt"), R_OK), 0);
    spit(tmp_path("plain"), "x", 1);
    char want[600];
    ck_assert_int_eq(ckpt_save(tmp_path("plain/sub"), &f.d, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: cannot create checkpoint directory: %s is not a directory",
             tmp_path("plain/sub"), tmp_path("plain"));
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(ckpt_save(tmp_path("plain"), &f.d, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: cannot create checkpoint directory: %s is not a directory",
             tmp_path("plain"), tmp_path("plain"));
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(ckpt_save("", &f.d, err, sizeof err), -1);
    ck_assert_str_eq(err, "(ckpt): no checkpoint directory given");
}
END_TEST

/* A checkpoint of a newer format (a newer hvdlab's, its header sealed) is not damaged: the run
 * stops at it with one line and leaves it where its own build finds it (it was renamed to
 * .damaged, and the run resumed from the epoch before and wrote its own file over the epoch).
 * The same version with a header CRC that fails is damage (a flipped byte) and is set aside. */
START_TEST(newer_format_stops_the_run_and_stays)
{
    char dir[512], want[2048];
    snprintf(dir, sizeof dir, "%s", tmp_path("newer"));
    fixture f;
    for (int e = 1; e <= 2; e++) {
        make_fixture(&f, 10, 2, e);
        save(dir, &f);
    }
    ckpt_expect w = expect_of(&f);
    size_t len;
    uint8_t *b = slurp(tmp_path("newer/checkpoint-2.ckpt"), &len);
    set_le32(b + 8, 3);
    reseal(b, len);
    spit(tmp_path("newer/checkpoint-2.ckpt"), b, len);
    int cap = capture_begin();
    int e = ckpt_latest_epoch(dir, &w, 0, err, sizeof err);
    char *out = capture_end(cap);
    ck_assert_msg(e == -1, "latest %d: %s / %s", e, err, out);
    ck_assert_str_eq(out, "");
    free(out);
    snprintf(want, sizeof want, "%s/checkpoint-2.ckpt: checkpoint format version 3, this hvdlab "
             "reads versions 1 and 2 (a newer hvdlab wrote it: resume with that one); use another "
             "--log-dir, or --restart which moves the old files aside into a dated subfolder; "
             "nothing is deleted", dir);
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(access(tmp_path("newer/checkpoint-2.ckpt"), F_OK), 0);
    ck_assert_int_eq(access(tmp_path("newer/checkpoint-2.ckpt.damaged"), F_OK), -1);
    b[124] ^= 1; /* the header CRC no longer holds: a damaged file */
    spit(tmp_path("newer/checkpoint-2.ckpt"), b, len);
    free(b);
    cap = capture_begin();
    e = ckpt_latest_epoch(dir, &w, 0, err, sizeof err);
    free(capture_end(cap));
    ck_assert_msg(e == 1, "latest %d: %s", e, err);
    ck_assert_int_eq(access(tmp_path("newer/checkpoint-2.ckpt.damaged"), F_OK), 0);
}
END_TEST

/* A damaged file is set aside under a free name: an earlier checkpoint-N.ckpt.damaged (and
 * .damaged.2) stays byte for byte, and the warning names the file actually written. */
START_TEST(set_aside_never_overwrites_an_earlier_damaged_file)
{
    char dir[512], want[2048];
    snprintf(dir, sizeof dir, "%s", tmp_path("dmg"));
    ck_assert_int_eq(ckpt_mkdirs(dir, err, sizeof err), 0);
    spit(tmp_path("dmg/checkpoint-2.ckpt.damaged"), "first", 5);
    spit(tmp_path("dmg/checkpoint-2.ckpt.damaged.2"), "second", 6);
    spit(tmp_path("dmg/checkpoint-2.ckpt"), "HVDLCKPT", 8);
    int cap = capture_begin();
    int e = ckpt_latest_epoch(dir, NULL, 0, err, sizeof err);
    char *out = capture_end(cap);
    ck_assert_int_eq(e, -1);
    snprintf(want, sizeof want, "; renamed to %s/checkpoint-2.ckpt.damaged.3, not overwritten\n",
             dir);
    ck_assert_msg(strstr(out, want) != NULL, "%s", out);
    free(out);
    size_t len;
    const char *keep[][2] = {{"dmg/checkpoint-2.ckpt.damaged", "first"},
                             {"dmg/checkpoint-2.ckpt.damaged.2", "second"},
                             {"dmg/checkpoint-2.ckpt.damaged.3", "HVDLCKPT"}};
    for (int i = 0; i < 3; i++) {
        uint8_t *b = slurp(tmp_path(keep[i][0]), &len);
        ck_assert_msg(len == strlen(keep[i][1]) && !memcmp(b, keep[i][1], len), "%s changed",
                      keep[i][0]);
        free(b);
    }
    ck_assert_int_eq(access(tmp_path("dmg/checkpoint-2.ckpt"), F_OK), -1);
    /* the move under it refuses a name that is taken and leaves both files */
    errno = 0;
    ck_assert_int_eq(ckpt_move_noclobber(tmp_path("dmg/checkpoint-2.ckpt.damaged.2"),
                                         tmp_path("dmg/checkpoint-2.ckpt.damaged")), -1);
    ck_assert_int_eq(errno, EEXIST);
    ck_assert_int_eq(access(tmp_path("dmg/checkpoint-2.ckpt.damaged.2"), F_OK), 0);
}
END_TEST

/* A damaged file that cannot be set aside (here: every name up to .damaged.1000 is taken) stops
 * the scan: going on to an older epoch would let this run's save overwrite it. */
START_TEST(damaged_file_that_cannot_be_set_aside_stops_the_run)
{
    char dir[512], name[600], want[2048];
    snprintf(dir, sizeof dir, "%s", tmp_path("full"));
    fixture f;
    make_fixture(&f, 10, 2, 1);
    save(dir, &f);
    ckpt_expect w = expect_of(&f);
    spit(tmp_path("full/checkpoint-2.ckpt.damaged"), "x", 1);
    for (int k = 2; k <= 1000; k++) {
        snprintf(name, sizeof name, "full/checkpoint-2.ckpt.damaged.%d", k);
        spit(tmp_path(name), "x", 1);
    }
    spit(tmp_path("full/checkpoint-2.ckpt"), "HVDLCKPT", 8);
    int cap = capture_begin();
    int e = ckpt_latest_epoch(dir, &w, 0, err, sizeof err);
    char *out = capture_end(cap);
    ck_assert_msg(e == -1, "latest %d: %s / %s", e, err, out);
    ck_assert_str_eq(out, ""); /* the error is the one line */
    free(out);
    snprintf(want, sizeof want, "%s/checkpoint-2.ckpt: ", dir);
    ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "%s", err);
    ck_assert_msg(strstr(err, "; cannot rename it aside: File exists, and this run would "
                              "overwrite it; use another --log-dir"), "%s", err);
    size_t len;
    uint8_t *b = slurp(tmp_path("full/checkpoint-2.ckpt"), &len);
    ck_assert_msg(len == 8 && !memcmp(b, "HVDLCKPT", 8), "checkpoint-2.ckpt changed");
    free(b);
}
END_TEST

/* dir/restart-<the stamp of t>, the folder a --restart at time t makes first */
static void restart_dir(char *p, size_t len, const char *dir, time_t t)
{
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime(&t));
    snprintf(p, len, "%s/restart-%s", dir, stamp);
}

/* restart_dir(when + s) for s in [0, n): a folder an earlier --restart made, holding a
 * checkpoint-2.ckpt with its own bytes ("s"). */
#define TAKEN_SECONDS 60
static void make_earlier_restarts(const char *dir, time_t when, int n)
{
    char p[1024], body[16];
    for (int s = 0; s < n; s++) {
        restart_dir(p, sizeof p, dir, when + s);
        ck_assert_int_eq(mkdir(p, 0777), 0);
        strcat(p, "/checkpoint-2.ckpt");
        spit(p, body, (size_t)snprintf(body, sizeof body, "%d", s));
    }
}

/* --restart picks a folder no earlier restart holds (two restarts in one second, a clock stepped
 * back): every file an earlier one moved stays byte for byte, and the line names the folder
 * used. The folders of the next TAKEN_SECONDS seconds are taken beforehand, so the test does
 * not depend on timing. */
START_TEST(restart_never_overwrites_an_earlier_restart)
{
    char dir[512], p[1024], body[16];
    snprintf(dir, sizeof dir, "%s", tmp_path("rs"));
    ck_assert_int_eq(ckpt_mkdirs(dir, err, sizeof err), 0);
    const time_t when = time(NULL);
    make_earlier_restarts(dir, when, TAKEN_SECONDS);
    spit(tmp_path("rs/checkpoint-2.ckpt"), "new", 3);
    ckpt_set_restart(1);
    int cap = capture_begin();
    int rc = ckpt_prepare_dir(dir, 0, err, sizeof err);
    char *out = capture_end(cap);
    ckpt_set_restart(0);
    ck_assert_msg(rc == 0, "%s", err);
    /* "hvdlab: --restart: 1 file(s) of the earlier run moved to DIR/restart-YYYYmmdd-HHMMSS-2" */
    snprintf(p, sizeof p, "hvdlab: --restart: 1 file(s) of the earlier run moved to %s/restart-",
             dir);
    size_t at = strlen(p), len;
    ck_assert_msg(!strncmp(out, p, at) && strlen(out) == at + 18 && !strcmp(out + at + 15, "-2\n"),
                  "%s", out);
    const char *used = strstr(out, " moved to ") + 10;
    snprintf(p, sizeof p, "%.*s/checkpoint-2.ckpt", (int)strlen(used) - 1, used);
    uint8_t *b = slurp(p, &len);
    ck_assert_msg(len == 3 && !memcmp(b, "new", 3), "%s: not the moved file", p);
    free(b);
    free(out);
    for (int s = 0; s < TAKEN_SECONDS; s++) { /* the earlier restarts' files, unchanged */
        restart_dir(p, sizeof p, dir, when + s);
        strcat(p, "/checkpoint-2.ckpt");
        b = slurp(p, &len);
        ck_assert_msg(len == (size_t)snprintf(body, sizeof body, "%d", s) && !memcmp(b, body, len),
                      "%s, the file an earlier restart left, changed", p);
        free(b);
    }
}
END_TEST

/* One run at a time in a log dir: a live run (a child process here) holding it stops another
 * after a short wait, with a line naming the holder, and moves nothing with --restart; another
 * rank of the holder's job passes; once the holder has ended the dir is free, and the process
 * that holds it may prepare it again. */
START_TEST(a_live_run_holds_its_log_dir)
{
    char dir[512], want[1024], c = 'n';
    snprintf(dir, sizeof dir, "%s", tmp_path("busy"));
    ck_assert_int_eq(ckpt_mkdirs(dir, err, sizeof err), 0);
    spit(tmp_path("busy/checkpoint-1.ckpt"), "live", 4);
    setenv("PMIX_NAMESPACE", "job-a", 1);
    int held[2], done[2];
    ck_assert(pipe(held) == 0 && pipe(done) == 0);
    pid_t child = fork();
    if (child == 0) {
        close(done[1]); /* the parent's close, or its end, is the EOF that lets go */
        c = ckpt_lock_dir(dir, err, sizeof err) == 0 ? 'y' : 'n';
        if (write(held[1], &c, 1) == 1)
            c = read(done[0], &c, 1) == 0 ? 'y' : 'n'; /* holds it until the parent has looked */
        _exit(c == 'y' ? 0 : 1);
    }
    ck_assert(read(held[0], &c, 1) == 1 && c == 'y');
    ck_assert_msg(ckpt_lock_dir(dir, err, sizeof err) == 0, "another rank of the job: %s", err);
    setenv("PMIX_NAMESPACE", "job-b", 1);
    ckpt_set_restart(1);
    int rc = ckpt_prepare_dir(dir, 0, err, sizeof err);
    ckpt_set_restart(0);
    ck_assert_int_eq(rc, -1);
    snprintf(want, sizeof want, "%s: another run is using this --log-dir (pid %ld on ", dir,
             (long)child);
    ck_assert_msg(!strncmp(err, want, strlen(want)) && strstr(err, "), since 20") == NULL &&
                  strstr(err, ", since 20") && strstr(err, "): wait for it to end, or use "
                  "another --log-dir"), "%s", err);
    size_t len;
    uint8_t *b = slurp(tmp_path("busy/checkpoint-1.ckpt"), &len); /* not moved by --restart */
    ck_assert(len == 4 && !memcmp(b, "live", 4));
    free(b);
    close(done[1]);
    int status;
    ck_assert(waitpid(child, &status, 0) == child && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0);
    ck_assert_msg(ckpt_lock_dir(dir, err, sizeof err) == 0, "after the holder ended: %s", err);
    unsetenv("PMIX_NAMESPACE"); /* no job to match: it passes as the holder */
    ck_assert_msg(ckpt_prepare_dir(dir, 0, err, sizeof err) == 0, "the holder again: %s", err);
}
END_TEST

/* A lock file this user may not write (another user's run left it, 0644): an flock needs no
 * write access, so each run takes it read-only, and the two still exclude each other; they used
 * to run unlocked. The holder line is then the earlier run's, whose pid is gone: not named. As
 * root (no permission check) the second run is made another user. */
START_TEST(a_read_only_lock_file_still_locks)
{
    char dir[512], lock[600], c = 'n';
    snprintf(dir, sizeof dir, "%s", tmp_path("shared"));
    ck_assert_int_eq(ckpt_mkdirs(dir, err, sizeof err), 0);
    snprintf(lock, sizeof lock, "%s/.hvdlab-lock", dir);
    setenv("PMIX_NAMESPACE", "job-old", 1);
    pid_t old = fork(); /* the earlier run: its line stays in the file */
    if (old == 0)
        _exit(ckpt_lock_dir(dir, err, sizeof err) == 0 ? 0 : 1);
    int status;
    ck_assert(waitpid(old, &status, 0) == old && WIFEXITED(status) && !WEXITSTATUS(status));
    ck_assert_int_eq(chmod(lock, 0444), 0);
    char parent[sizeof tmp_dir];
    snprintf(parent, sizeof parent, "%s", tmp_dir);
    *strrchr(parent, '/') = '\0';
    ck_assert(chmod(parent, 0755) == 0 && chmod(tmp_dir, 0755) == 0 && chmod(dir, 0777) == 0);
    int held[2], done[2];
    ck_assert(pipe(held) == 0 && pipe(done) == 0);
    setenv("PMIX_NAMESPACE", "job-a", 1);
    pid_t child = fork();
    if (child == 0) {
        close(done[1]);
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(2);
        c = ckpt_lock_dir(dir, err, sizeof err) == 0 ? 'y' : 'n';
        if (write(held[1], &c, 1) == 1)
            c = read(done[0], &c, 1) == 0 ? 'y' : 'n';
        _exit(c == 'y' ? 0 : 1);
    }
    ck_assert(read(held[0], &c, 1) == 1 && c == 'y');
    setenv("PMIX_NAMESPACE", "job-b", 1);
    int rc = ckpt_lock_dir(dir, err, sizeof err);
    close(done[1]);
    ck_assert(waitpid(child, &status, 0) == child && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0);
    ck_assert_msg(rc == -1, "a second run took the log dir its lock file does not let it write");
    char want[1024];
    snprintf(want, sizeof want, "%s: another run is using this --log-dir: wait for it to end, or "
             "use another --log-dir", dir);
    ck_assert_str_eq(err, want); /* not the earlier run's pid */
    ck_assert_msg(ckpt_lock_dir(dir, err, sizeof err) == 0, "after the holder ended: %s", err);
    unsetenv("PMIX_NAMESPACE");
}
END_TEST

/* Starts of one elastic run share its id (HVDLAB_ELASTIC_RUN): a new start passes the lock an
 * earlier start's rank 0 still holds (on NFS, a lost host's until its lease ends), whatever
 * their launcher's job ids. A child forked without exec (here a grandchild of the holder that
 * outlives it) lets go of its copy: once the holder has ended, the folder is free. */
START_TEST(elastic_starts_share_and_forked_children_let_go)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", tmp_path("elastic"));
    ck_assert_int_eq(ckpt_mkdirs(dir, err, sizeof err), 0);
    setenv("HVDLAB_ELASTIC_RUN", "vm-hvdrun-elastic-AbCdEf", 1);
    setenv("PMIX_NAMESPACE", "start-1", 1);
    int held[2], done[2], kid[2];
    ck_assert(pipe(held) == 0 && pipe(done) == 0 && pipe(kid) == 0);
    pid_t child = fork();
    if (child == 0) { /* the holder: locks, forks a child that stays, reports, waits, ends */
        close(done[1]);
        char c = ckpt_lock_dir(dir, err, sizeof err) == 0 ? 'y' : 'n';
        pid_t g = fork();
        if (g == 0) { /* the grandchild: alive until the parent's test ends (kid's EOF) */
            close(kid[1]);
            c = read(kid[0], &c, 1) == 0 ? 'y' : 'n';
            _exit(0);
        }
        if (write(held[1], &c, 1) == 1)
            c = read(done[0], &c, 1) == 0 ? 'y' : 'n';
        _exit(c == 'y' ? 0 : 1);
    }
    close(kid[0]);
    char c = 'n';
    ck_assert(read(held[0], &c, 1) == 1 && c == 'y');
    setenv("PMIX_NAMESPACE", "start-2", 1); /* the next start, another mpirun */
    ck_assert_msg(ckpt_lock_dir(dir, err, sizeof err) == 0, "the next start: %s", err);
    close(done[1]);
    int status;
    ck_assert(waitpid(child, &status, 0) == child && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0);
    unsetenv("HVDLAB_ELASTIC_RUN");
    unsetenv("PMIX_NAMESPACE");
    ck_assert_msg(ckpt_lock_dir(dir, err, sizeof err) == 0, "the holder has ended, its forked "
                  "child lives on: %s", err);
    close(kid[1]);
}
END_TEST

/* Something in the lock file's place that cannot be opened (a directory) stops the run with a
 * line naming it: taken as no lock, it let a second run share the folder. */
START_TEST(a_lock_file_that_cannot_be_opened_stops_the_run)
{
    char dir[512], want[1024];
    snprintf(dir, sizeof dir, "%s", tmp_path("dirlock"));
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    ck_assert_int_eq(mkdir(tmp_path("dirlock/.hvdlab-lock"), 0777), 0);
    ck_assert_int_eq(ckpt_prepare_dir(dir, 0, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s/.hvdlab-lock: cannot open this log dir's lock file: Is a "
             "directory (remove it, or use another --log-dir)", dir);
    ck_assert_str_eq(err, want);
}
END_TEST

/* A process out of file descriptors (ulimit -n 21 on the ranks) was told "checkpoint directory
 * is not writable: Too many open files": the limit is named instead. Every descriptor up to a
 * lowered limit is taken, then one (the lock's) or none is given back. */
START_TEST(out_of_descriptors_names_the_limit)
{
    char dir[512], want[1024];
    snprintf(dir, sizeof dir, "%s", tmp_path("fds"));
    struct rlimit rl = {64, 64};
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0); /* this forked test's process only */
    int fds[64], n = 0, fd;
    while (n < 64 && (fd = open("/dev/null", O_RDONLY)) >= 0)
        fds[n++] = fd;
    ck_assert_int_eq(errno, EMFILE);
    ck_assert_int_eq(ckpt_prepare_dir(dir, 0, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s/.hvdlab-lock: cannot open this log dir's lock file: Too many "
             "open files (this process may have 64 open: ulimit -n)", dir);
    ck_assert_str_eq(err, want);
    close(fds[--n]); /* room for the lock, none for the probe */
    ck_assert_int_eq(ckpt_prepare_dir(dir, 0, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: cannot create a file in the checkpoint directory: Too many "
             "open files (this process may have 64 open: ulimit -n)", dir);
    ck_assert_str_eq(err, want);
    while (n > 0)
        close(fds[--n]);
}
END_TEST

/* A folder that exists but whose file system makes no file in it (/proc: the kernel answers
 * ENOENT) was reported as "not writable: No such file or directory", as if it were missing. */
START_TEST(a_folder_that_takes_no_file_is_named_so)
{
    ck_assert_int_eq(ckpt_prepare_dir("/proc/self", 0, err, sizeof err), -1);
    ck_assert_str_eq(err, "/proc/self: checkpoint directory is not writable: the folder exists, "
                          "but its file system lets no file be created in it (use another "
                          "--log-dir)");
}
END_TEST

/* The param_set layer: restore into a fresh model and optimizer; trace lines; a failed load
 * changes nothing. */
START_TEST(param_set_layer_and_trace)
{
    fixture f;
    make_fixture(&f, 16, 2, 4);
    setenv("HVDLAB_TRACE", tmp_path("trace"), 1);
    float grads[NP] = {0};
    param_set ps = {.params = f.params, .grads = grads, .n = NP, .views = f.views, .nviews = 3,
                    .state = f.state, .n_state = NS, .state_views = f.sviews, .n_state_views = 2};
    optimizer opt = {.kind = &sgd_kind, .state = f.opt, .n_state = NO, .iterations = 77,
                     .last_lr = 0.5f};
    wrn_config cfg = {.depth = 16, .width = 2, .dropout = 0.01f};
    ck_assert_msg(ckpt_save_params(tmp_path("log"), 4, &cfg, &ps, &opt, err, sizeof err) == 0,
                  "%s", err);
    float p2[NP] = {0}, s2[NS] = {0}, o2[NO] = {0};
    param_set ps2 = ps;
    ps2.params = p2;
    ps2.state = s2;
    optimizer opt2 = {.kind = &novograd_kind, .state = o2, .n_state = NO};
    char want[800];
    ck_assert_int_eq(ckpt_load_params(tmp_path("log"), 4, &cfg, &ps2, &opt2, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: checkpoint holds sgd optimizer state, but this run uses "
             "novograd", tmp_path("log/checkpoint-4.ckpt"));
    ck_assert_str_eq(err, want);
    float zeros[NP] = {0};
    ck_assert_int_eq(memcmp(p2, zeros, sizeof p2), 0); /* untouched */
    opt2.kind = &sgd_kind;
    param_view tv[3]; /* same counts, another layout: refused */
    memcpy(tv, f.views, sizeof tv);
    tv[2] = view("fc.w", 20, 2, (int[]){2, 3}, 1);
    ps2.views = tv;
    ck_assert_int_eq(ckpt_load_params(tmp_path("log"), 4, &cfg, &ps2, &opt2, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "parameter view 2 is fc.w (3, 2) at 20 in the checkpoint, fc.w "
                              "(2, 3) at 20 in the model"), "%s", err);
    ps2.views = f.views;
    ck_assert_msg(ckpt_load_params(tmp_path("log"), 4, &cfg, &ps2, &opt2, err, sizeof err) == 0,
                  "%s", err);
    ck_assert_int_eq(memcmp(p2, f.params, sizeof p2), 0);
    ck_assert_int_eq(memcmp(s2, f.state, sizeof s2), 0);
    ck_assert_int_eq(memcmp(o2, f.opt, sizeof o2), 0);
    ck_assert_int_eq(opt2.iterations, 77);
    ck_assert_float_eq(opt2.last_lr, 0.5f);
    /* no optimizer: saved as kind -1, refused by a run that has one */
    ck_assert_msg(ckpt_save_params(tmp_path("log"), 5, &cfg, &ps, NULL, err, sizeof err) == 0,
                  "%s", err);
    ck_assert_int_eq(ckpt_load_params(tmp_path("log"), 5, &cfg, &ps2, &opt2, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "checkpoint holds no optimizer state, but this run uses sgd"), "%s",
                  err);
    ck_assert_msg(ckpt_load_params(tmp_path("log"), 5, &cfg, &ps2, NULL, err, sizeof err) == 0,
                  "%s", err);
    /* trace: save, restore, params for epoch 4 then for epoch 5; the failed loads left no line */
    char tp[600];
    snprintf(tp, sizeof tp, "trace/pid-%ld.log", (long)getpid());
    size_t n;
    char *log = (char *)slurp(tmp_path(tp), &n);
    log[n] = '\0';
    unsigned long long sum = (unsigned long long)params_checksum(f.params, NP),
                       ssum = (unsigned long long)params_checksum(f.state, NS);
    const char *expect[] = {"ckpt_save", "ckpt_restore", "params", "ckpt_save", "ckpt_restore",
                            "params"};
    const char *line = log;
    for (int i = 0; i < 6; i++, line = strchr(line, '\n') + 1) {
        char ev[64];
        snprintf(ev, sizeof ev, "event=%s ", expect[i]);
        ck_assert_msg(!strncmp(line, ev, strlen(ev)), "line %d: %s", i, line);
        int epoch = i < 3 ? 4 : 5;
        if (expect[i][0] == 'c')
            snprintf(want, sizeof want, " path=%s/checkpoint-%d.ckpt epoch=%d\n",
                     tmp_path("log"), epoch, epoch);
        else
            snprintf(want, sizeof want, " when=restore epoch=%d sum=%016llx state_sum=%016llx\n",
                     epoch, sum, ssum);
        const char *nl = strchr(line, '\n');
        ck_assert_msg(nl && (size_t)(nl + 1 - line) > strlen(want) &&
                          !strncmp(nl + 1 - strlen(want), want, strlen(want)),
                      "line %d: %.*s, want ...%s", i, (int)(nl - line), line, want);
    }
    ck_assert_str_eq(line, "");
    free(log);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("ckpt_files");
    TCase *tc = tcase_create("ckpt_files");
    tcase_add_unchecked_fixture(tc, tmp_suite_setup, tmp_suite_teardown);
    tcase_add_checked_fixture(tc, setup, tmp_test_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, latest_skips_bad_files_with_one_warning_each);
    tcase_add_test(tc, fifo_in_place_of_a_checkpoint_does_not_block);
    tcase_add_test(tc, mid_epoch_files_sort_between_epochs);
    tcase_add_test(tc, killed_writer_leaves_previous_checkpoint);
    tcase_add_test(tc, creates_log_dir_or_names_it);
    tcase_add_test(tc, set_aside_never_overwrites_an_earlier_damaged_file);
    tcase_add_test(tc, newer_format_stops_the_run_and_stays);
    tcase_add_test(tc, damaged_file_that_cannot_be_set_aside_stops_the_run);
    tcase_add_test(tc, restart_never_overwrites_an_earlier_restart);
    tcase_add_test(tc, a_live_run_holds_its_log_dir);
    tcase_add_test(tc, a_lock_file_that_cannot_be_opened_stops_the_run);
    tcase_add_test(tc, elastic_starts_share_and_forked_children_let_go);
    tcase_add_test(tc, a_read_only_lock_file_still_locks);
    tcase_add_test(tc, a_folder_that_takes_no_file_is_named_so);
    tcase_add_test(tc, out_of_descriptors_names_the_limit);
    tcase_add_test(tc, param_set_layer_and_trace);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, make_suite(), 0); }
