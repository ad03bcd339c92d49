/* ckpt_dir.c — the log directory made ready before the first batch (ckpt.h): with --restart the
 * directory created and locked (ckpt_lock.c), the old files moved aside, temp files of killed
 * writers removed, a probe file written and removed, and room for two checkpoints checked.
 * Public: ckpt_set_restart, ckpt_prepare_dir, ckpt_expect_bytes.
 */
#include "ckpt/ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "base/errmsg.h"

/* The step programs hand the checkpoint layer a directory, not the flags: --restart reaches it
 * through args_parse. */
static int restart_requested;

void ckpt_set_restart(int on) { restart_requested = on; }

/* Names a writer or an earlier run left: checkpoint-N.ckpt, its temp files, *.damaged. */
static int is_temp(const char *n) { return !strncmp(n, ".checkpoint-", 12) && strstr(n, ".tmp-"); }
static int is_ours(const char *n)
{
    return is_temp(n) || (!strncmp(n, "checkpoint-", 11) && (strstr(n, ".ckpt") != NULL));
}

/* Creates DIR/restart-YYYYmmdd-HHMMSS for now, or -2, -3, ... after it when an earlier restart
 * (the same second, a clock stepped back) holds that name: mkdir never reuses a folder, so
 * nothing moved into it can land on an earlier run's file. Its path in sub. */
static int make_restart_dir(const char *dir, char *sub, size_t len, char *err, size_t errlen)
{
    char stamp[32];
    time_t now = time(NULL);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime(&now));
    for (int k = 1; k <= 1000; k++) {
        int n = k == 1 ? snprintf(sub, len, "%s/restart-%s", dir, stamp)
                       : snprintf(sub, len, "%s/restart-%s-%d", dir, stamp, k);
        if (n < 0 || (size_t)n >= len)
            return errmsg_set(err, errlen, dir, "--restart: the folder name is too long");
        if (mkdir(sub, 0777) == 0)
            return 0;
        if (errno != EEXIST)
            return errmsg_set(err, errlen, sub, "--restart: cannot create it: %s",
                              strerror(errno));
    }
    return errmsg_set(err, errlen, sub, "--restart: cannot create it: %s", strerror(EEXIST));
}

/* --restart: every file of an earlier run into a new DIR/restart-YYYYmmdd-HHMMSS[-k]
 * (nothing deleted, nothing overwritten). */
static int move_aside(const char *dir, char *err, size_t errlen)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return 0; /* empty: ckpt_mkdirs has just created it */
    char sub[4096] = "", from[4096], to[8192];
    int moved = 0;
    for (struct dirent *de; (de = readdir(dp));) {
        if (!is_ours(de->d_name))
            continue;
        if (!*sub && make_restart_dir(dir, sub, sizeof sub, err, errlen)) {
            closedir(dp);
            return -1;
        }
        snprintf(from, sizeof from, "%s/%s", dir, de->d_name);
        snprintf(to, sizeof to, "%s/%s", sub, de->d_name);
        if (ckpt_move_noclobber(from, to) != 0 && errno != ENOENT) {
            closedir(dp);
            return errmsg_set(err, errlen, from, "--restart: cannot move it to %s: %s", sub,
                              strerror(errno));
        }
        moved++;
    }
    closedir(dp);
    if (moved)
        fprintf(stderr, "hvdlab: --restart: %d file(s) of the earlier run moved to %s\n", moved,
                sub);
    return 0;
}

/* A killed writer leaves its temp file; no reader looks at it, so it only takes space. */
static void remove_temps(const char *dir)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return;
    char p[4096];
    for (struct dirent *de; (de = readdir(dp));)
        if (is_temp(de->d_name) && snprintf(p, sizeof p, "%s/%s", dir, de->d_name) < (int)sizeof p)
            unlink(p);
    closedir(dp);
}

static int probe_writable(const char *dir, char *err, size_t errlen)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/.hvdlab-probe-XXXXXX", dir);
    int fd = mkstemp(p);
    if (fd < 0) {
        const int e = errno;
        struct stat st;
        /* A folder that exists on a file system that makes no files (the kernel's own, /proc)
         * answers ENOENT, which strerror words as if the folder were missing. */
        /* Out of descriptors says nothing of the folder: the process's limit is the fault. */
        if (e == EMFILE || e == ENFILE)
            return errmsg_set(err, errlen, dir, "cannot create a file in the checkpoint "
                              "directory: %s", errmsg_strerror(e));
        if (e == ENOENT && stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
            return errmsg_set(err, errlen, dir, "checkpoint directory is not writable: the "
                              "folder exists, but its file system lets no file be created in "
                              "it (use another --log-dir)");
        return errmsg_set(err, errlen, dir, "checkpoint directory is not writable: %s (use "
                          "another --log-dir)", strerror(e));
    }
    int bad = write(fd, "probe\n", 6) != 6 ? errno : 0;
    close(fd);
    unlink(p);
    if (bad)
        return errmsg_set(err, errlen, dir, "checkpoint directory is not writable: %s (use "
                          "another --log-dir)", strerror(bad ? bad : EIO));
    return 0;
}

int ckpt_prepare_dir(const char *dir, size_t file_bytes, char *err, size_t errlen)
{
    /* Locked before anything is moved or removed: a run still using dir keeps its files. */
    if (ckpt_mkdirs(dir, err, errlen) || ckpt_lock_dir(dir, err, errlen))
        return -1;
    if (restart_requested && move_aside(dir, err, errlen))
        return -1;
    remove_temps(dir);
    if (probe_writable(dir, err, errlen))
        return -1;
    struct statvfs sv;
    if (file_bytes && statvfs(dir, &sv) == 0) {
        unsigned long long avail = (unsigned long long)sv.f_bavail * sv.f_frsize;
        if (avail < 2ull * file_bytes)
            return errmsg_set(err, errlen, dir, "%llu bytes free, a checkpoint of this model "
                              "takes %zu and a save needs room for two (free some space or use "
                              "another --log-dir)", avail, file_bytes);
    }
    return 0;
}

size_t ckpt_expect_bytes(const ckpt_expect *w)
{
    return CKPT_HEADER_BYTES + (size_t)CKPT_VIEW_BYTES * (size_t)(w->nviews + w->n_state_views) +
           4 * (w->n_params + w->n_state + w->n_opt_state) + CKPT_RESUME_BYTES + 4;
}
