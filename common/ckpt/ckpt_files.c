/* ckpt_files.c — checkpoint files in a log directory: created atomically (temp file, fsync,
 * rename, directory fsync), loaded with every check, and the newest valid epoch found. The
 * format itself is in ckpt_format.c; what a file must fit, ckpt_check.c.
 * Public: ckpt_mkdirs, ckpt_write_temp, ckpt_commit, ckpt_save, ckpt_load, ckpt_latest_epoch,
 * ckpt_newest_valid, ckpt_found_batch, ckpt_set_aside, ckpt_move_noclobber.
 */
#include "ckpt/ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/errmsg.h"
#include "base/trace.h"

/* Temp files start with a dot and never match checkpoint-N.ckpt, so no reader looks at them. */
#define CKPT_TMP_PREFIX ".checkpoint-"

int ckpt_mkdirs(const char *dir, char *err, size_t errlen)
{
    char p[4096];
    if (!dir || !*dir)
        return errmsg_set(err, errlen, "(ckpt)", "no checkpoint directory given");
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p)
        return errmsg_set(err, errlen, dir, "checkpoint directory name too long");
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        struct stat st;
        if (mkdir(p, 0777) != 0) {
            int e = errno; /* EEXIST, or EACCES/EROFS on a component that already exists */
            if (stat(p, &st) != 0)
                return errmsg_set(err, errlen, dir, "cannot create checkpoint directory: %s",
                                  strerror(e));
            if (!S_ISDIR(st.st_mode))
                return errmsg_set(err, errlen, dir, "cannot create checkpoint directory: %s is "
                                  "not a directory", p);
        }
        if (!(*s = c))
            return 0;
    }
}

int ckpt_write_temp(const char *dir, const ckpt_data *d, char *tmp, size_t tmplen, char *err,
                    size_t errlen)
{
    char what[256];
    if (ckpt_nonfinite(d, what, sizeof what)) {
        char path[4096];
        ckpt_path(path, sizeof path, dir, d->epoch);
        return errmsg_set(err, errlen, path, "not saved: %s (the training diverged; try a "
                          "smaller --base-lr or more --warmup-epochs)", what);
    }
    if (ckpt_implausible(d, what, sizeof what)) { /* a writer's bug: no run reads it back */
        char path[4096];
        ckpt_path_at(path, sizeof path, dir, d->epoch, d->resume.batch);
        return errmsg_set(err, errlen, path, "not saved: implausible %s", what);
    }
    if (ckpt_mkdirs(dir, err, errlen))
        return -1;
    int n = snprintf(tmp, tmplen, "%s/" CKPT_TMP_PREFIX "%d.ckpt.tmp-XXXXXX", dir, d->epoch);
    if (n < 0 || (size_t)n >= tmplen)
        return errmsg_set(err, errlen, dir, "checkpoint path too long");
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return errmsg_set(err, errlen, tmp, "cannot create checkpoint: %s",
                          errmsg_strerror(errno));
    int rc = ckpt_write_fd(fd, d, tmp, err, errlen);
    if (!rc && fchmod(fd, 0644) != 0)
        rc = errmsg_set(err, errlen, tmp, "cannot chmod checkpoint: %s", strerror(errno));
    if (!rc && fsync(fd) != 0)
        rc = errmsg_set(err, errlen, tmp, "cannot fsync checkpoint: %s", strerror(errno));
    if (close(fd) != 0 && !rc)
        rc = errmsg_set(err, errlen, tmp, "cannot close checkpoint: %s", strerror(errno));
    if (rc)
        unlink(tmp);
    return rc;
}

/* Paths with a space, quote, backslash or '=' are quoted so the trace line stays key=value. */
static const char *trace_path(const char *p, char *buf, size_t len)
{
    return strpbrk(p, " \t\"\\=\n") ? trace_quote(p, buf, len) : p;
}

static int commit_at(const char *dir, const char *tmp, int epoch, int batch, char *err,
                     size_t errlen)
{
    char path[4096], q[8192];
    if (ckpt_path_at(path, sizeof path, dir, epoch, batch)) {
        unlink(tmp);
        return errmsg_set(err, errlen, dir, "checkpoint path too long");
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return errmsg_set(err, errlen, path, "cannot rename %s to it: %s", tmp, strerror(e));
    }
    /* The rename is durable only once the directory entry is on disk. */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || fsync(dfd) != 0) {
        int e = errno;
        if (dfd >= 0)
            close(dfd);
        return errmsg_set(err, errlen, dir, "cannot fsync checkpoint directory: %s", strerror(e));
    }
    close(dfd);
    if (batch > 0)
        trace_event("ckpt_save", "path=%s epoch=%d batch=%d", trace_path(path, q, sizeof q),
                    epoch, batch);
    else
        trace_event("ckpt_save", "path=%s epoch=%d", trace_path(path, q, sizeof q), epoch);
    return 0;
}

int ckpt_commit(const char *dir, const char *tmp, int epoch, char *err, size_t errlen)
{
    return commit_at(dir, tmp, epoch, 0, err, errlen);
}

int ckpt_save(const char *dir, const ckpt_data *d, char *err, size_t errlen)
{
    char tmp[4096];
    if (ckpt_write_temp(dir, d, tmp, sizeof tmp, err, errlen))
        return -1;
    return commit_at(dir, tmp, d->epoch, d->resume.batch, err, errlen);
}

/* Read + check + the epoch and batch in the file agree with its name. */
static int read_checked(const char *path, int epoch, int batch, const ckpt_expect *want,
                        ckpt_file *f, char *err, size_t errlen)
{
    char what[256];
    if (ckpt_read_file(path, f, err, errlen))
        return -1;
    if ((ckpt_nonfinite(&f->d, what, sizeof what) &&
         errmsg_set(err, errlen, path, "checkpoint holds a non-finite value (%s), refused",
                    what)) ||
        (ckpt_implausible(&f->d, what, sizeof what) &&
         errmsg_set(err, errlen, path, "implausible checkpoint: %s, refused", what)) ||
        (want && ckpt_check(f, want, path, err, errlen)) ||
        (f->d.epoch != epoch && !batch && !f->d.resume.batch &&
         errmsg_set(err, errlen, path, "checkpoint holds epoch %d, its name says %d", f->d.epoch,
                    epoch)) ||
        ((f->d.epoch != epoch || f->d.resume.batch != batch) &&
         errmsg_set(err, errlen, path, "checkpoint holds epoch %d batch %d, its name says epoch "
                    "%d batch %d", f->d.epoch, f->d.resume.batch, epoch, batch))) {
        ckpt_file_free(f);
        return -1;
    }
    return 0;
}

/* Where the last scan of a directory ended: a mid-epoch file there is what loading its epoch
 * means (see ckpt_found_batch). */
static struct {
    char dir[4096];
    int epoch, batch;
} found;

int ckpt_found_batch(const char *dir, int epoch)
{
    return found.batch > 0 && found.epoch == epoch && (!dir || !strcmp(found.dir, dir))
               ? found.batch : 0;
}

int ckpt_load(const char *dir, int epoch, const ckpt_expect *want, ckpt_file *f, char *err,
              size_t errlen)
{
    char path[4096], q[8192];
    memset(f, 0, sizeof *f);
    int batch = ckpt_found_batch(dir, epoch);
    if (ckpt_path_at(path, sizeof path, dir ? dir : "", epoch, batch))
        return errmsg_set(err, errlen, dir, "checkpoint path too long");
    if (read_checked(path, epoch, batch, want, f, err, errlen))
        return -1;
    if (batch > 0)
        trace_event("ckpt_restore", "path=%s epoch=%d batch=%d", trace_path(path, q, sizeof q),
                    epoch, batch);
    else
        trace_event("ckpt_restore", "path=%s epoch=%d", trace_path(path, q, sizeof q), epoch);
    return 0;
}

int ckpt_move_noclobber(const char *from, const char *to)
{
#ifdef RENAME_NOREPLACE
    if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
        return -1; /* EEXIST among them; the others: this file system cannot do it atomically */
#endif
    /* link() never replaces a name that exists; a crash before the unlink leaves both names */
    if (link(from, to) == 0) {
        if (unlink(from) == 0)
            return 0;
        int e = errno;
        unlink(to);
        errno = e;
        return -1;
    }
    if (errno != EPERM && errno != ENOTSUP && errno != ENOSYS)
        return -1;
    /* no hard links here (FAT, some network file systems, directories): look, then rename */
    struct stat st;
    if (lstat(to, &st) == 0)
        errno = EEXIST;
    else if (errno == ENOENT)
        return rename(from, to);
    return -1;
}

int ckpt_set_aside(const char *path, const char *why)
{
    char to[4200];
    int rc = -1;
    errno = EEXIST;
    /* path.damaged, else path.damaged.2, .3, ...: an earlier damaged file is evidence too */
    for (int k = 1; k <= 1000 && rc != 0 && errno == EEXIST; k++) {
        if (k == 1)
            snprintf(to, sizeof to, "%s.damaged", path);
        else
            snprintf(to, sizeof to, "%s.damaged.%d", path, k);
        rc = ckpt_move_noclobber(path, to);
    }
    if (rc != 0)
        return -1; /* errno says why; the caller stops with one line */
    fprintf(stderr, "hvdlab: warning: %s; renamed to %s, not overwritten\n", why, to);
    return 0;
}

typedef struct {
    int epoch, batch;
} position;

/* A whole number as ckpt_path writes it (no sign, no leading zeros) at *p; -1 if none. */
static long number_at(const char **p)
{
    const char *s = *p;
    if (*s < '0' || *s > '9' || (s[0] == '0' && s[1] >= '0' && s[1] <= '9'))
        return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || v > INT32_MAX)
        return -1;
    *p = end;
    return v;
}

/* "checkpoint-E.ckpt" (E >= 1) or "checkpoint-E.B.ckpt" (B >= 1, saved mid-epoch); 0 if the
 * name is neither. */
static int position_of_name(const char *name, position *pos)
{
    if (strncmp(name, "checkpoint-", 11) != 0)
        return 0;
    const char *s = name + 11;
    long e = number_at(&s), b = 0;
    if (e < 0)
        return 0;
    if (s[0] == '.' && s[1] >= '1' && s[1] <= '9') {
        s++;
        if ((b = number_at(&s)) < 1)
            return 0;
    }
    if (strcmp(s, ".ckpt") != 0 || (b == 0 && e < 1))
        return 0;
    *pos = (position){(int)e, (int)b};
    return 1;
}

static int cmp_desc(const void *a, const void *b)
{
    const position *x = a, *y = b;
    if (x->epoch != y->epoch)
        return (x->epoch < y->epoch) - (x->epoch > y->epoch);
    return (x->batch < y->batch) - (x->batch > y->batch);
}

/* The positions of dir's checkpoint files, newest first, up to max_epoch (<= 0: any): 0 and
 * *ep (free it; NULL when none) and *n; -1 and one line in err. A missing dir has none. */
static int list_positions(const char *dir, int max_epoch, position **out, int *count, char *err,
                          size_t errlen)
{
    *out = NULL;
    *count = 0;
    DIR *dp = opendir(dir);
    if (!dp) {
        if (errno == ENOENT)
            return 0;
        return errmsg_set(err, errlen, dir, "cannot list checkpoint directory: %s",
                          strerror(errno));
    }
    position *ep = NULL, pos;
    int n = 0, cap = 0;
    for (struct dirent *de; (de = readdir(dp));) {
        /* a run of max_epoch epochs never reaches a later position */
        if (!position_of_name(de->d_name, &pos) ||
            (max_epoch > 0 && (pos.epoch > max_epoch || (pos.batch && pos.epoch >= max_epoch))))
            continue;
        if (n == cap) {
            position *q = realloc(ep, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *ep);
            if (!q) {
                free(ep);
                closedir(dp);
                return errmsg_set(err, errlen, dir, "out of memory listing checkpoints");
            }
            ep = q;
        }
        ep[n++] = pos;
    }
    closedir(dp);
    if (n > 1) /* qsort(NULL, 0, ...) is undefined */
        qsort(ep, (size_t)n, sizeof *ep, cmp_desc);
    *out = ep;
    *count = n;
    return 0;
}

int ckpt_newest_valid(const char *dir, int *epoch, int *batch)
{
    char msg[ERRMSG_LEN];
    position *ep;
    int n, hit = -1;
    if (!dir || !*dir || list_positions(dir, 0, &ep, &n, msg, sizeof msg))
        return -1;
    for (int i = 0; i < n && hit < 0; i++) {
        char path[4096];
        ckpt_file f;
        if (ckpt_path_at(path, sizeof path, dir, ep[i].epoch, ep[i].batch) == 0 &&
            read_checked(path, ep[i].epoch, ep[i].batch, NULL, &f, msg, sizeof msg) == 0) {
            ckpt_file_free(&f);
            hit = i;
        }
    }
    if (hit >= 0) {
        *epoch = ep[hit].epoch;
        *batch = ep[hit].batch;
    }
    free(ep);
    return hit >= 0 ? 0 : -1;
}

int ckpt_latest_epoch(const char *dir, const ckpt_expect *want, int max_epoch, char *err,
                      size_t errlen)
{
    found.batch = 0;
    if (!dir || !*dir)
        return errmsg_set(err, errlen, "(ckpt)", "no checkpoint directory given");
    position *ep;
    int n;
    if (list_positions(dir, max_epoch, &ep, &n, err, errlen))
        return -1;
    /* Newest first, down to the first file this run can resume from: only the newer ones
     * would be overwritten. A damaged one is renamed aside; one of another model or optimizer
     * stops the run, as does a directory whose every checkpoint is damaged. */
    int rc = 0, damaged = 0, hit = -1;
    for (int i = 0; i < n && hit < 0 && !rc; i++) {
        char path[4096], msg[ERRMSG_LEN];
        ckpt_file f;
        if (ckpt_path_at(path, sizeof path, dir, ep[i].epoch, ep[i].batch))
            continue;
        if (read_checked(path, ep[i].epoch, ep[i].batch, NULL, &f, msg, sizeof msg) != 0) {
            if (ckpt_newer_format(path)) { /* not damaged: its own build resumes from it */
                rc = errmsg_set(err, errlen, NULL, "%s (a newer hvdlab wrote it: resume with that "
                                "one); " CKPT_WAYS_ON, msg);
                continue;
            }
            /* left in place, it would be overwritten by this run's save of its epoch */
            if (ckpt_set_aside(path, msg) != 0)
                rc = errmsg_set(err, errlen, NULL, "%s; cannot rename it aside: %s, and this "
                                "run would overwrite it; " CKPT_WAYS_ON, msg, strerror(errno));
            damaged++;
            continue;
        }
        if (want && ckpt_check(&f, want, path, msg, sizeof msg) != 0)
            rc = errmsg_set(err, errlen, NULL, "%s; " CKPT_WAYS_ON, msg);
        else
            hit = i;
        ckpt_file_free(&f);
    }
    if (!rc && hit < 0 && damaged)
        rc = errmsg_set(err, errlen, dir, "every checkpoint in it is damaged (renamed to "
                        "*.damaged); " CKPT_WAYS_ON);
    if (!rc && hit >= 0 && ep[hit].batch > 0 &&
        snprintf(found.dir, sizeof found.dir, "%s", dir) < (int)sizeof found.dir) {
        found.epoch = ep[hit].epoch;
        found.batch = ep[hit].batch;
    }
    int e = hit >= 0 ? ep[hit].epoch : 0;
    free(ep);
    return rc ? rc : e;
}
