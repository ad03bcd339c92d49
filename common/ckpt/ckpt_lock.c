/* ckpt_lock.c — one run at a time in a log directory (ckpt.h): the rank that prepares the
 * directory holds an flock on DIR/.hvdlab-lock until it exits, and the file says who holds it.
 * Without it two jobs started with the same --log-dir resume each other's checkpoints, save over
 * them, and remove each other's temp files mid-write.
 * Public: ckpt_lock_dir.
 */
#include "ckpt/ckpt.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/errmsg.h"

#define LOCK_NAME ".hvdlab-lock"
/* How long a run waits for the holder to let go: a job that has just ended (an elastic restart,
 * a script that runs two jobs in a row) may still be closing its ranks. */
#define LOCK_WAIT_MS 3000

/* The lock files this process holds (an flock conflicts with another open of the same file even
 * in one process, and tests and programs may prepare one directory twice). */
typedef struct held_lock {
    dev_t dev;
    ino_t ino;
    int fd;
    struct held_lock *next;
} held_lock;
static held_lock *held;

/* A child forked without exec shares the lock's open file: outliving its parent, it would keep
 * the folder locked in the name of a process that has ended. It lets go of its copies (the
 * parent's lock stays) and holds nothing of its own. */
static void forget_in_child(void)
{
    while (held) {
        held_lock *h = held;
        held = h->next;
        close(h->fd);
        free(h);
    }
}

static void register_fork_handler(void) { pthread_atfork(NULL, NULL, forget_in_child); }

static int holds(const struct stat *st)
{
    for (const held_lock *h = held; h; h = h->next)
        if (h->dev == st->st_dev && h->ino == st->st_ino)
            return 1;
    return 0;
}

/* The job this process belongs to as the launcher names it (Open MPI: PMIX_NAMESPACE), "" when
 * started alone: ranks of one job that all prepare the directory (a student's step 7 without
 * the rank-0 test) must not stop each other; that mistake has its own grader hint. */
static const char *job_name(void)
{
    /* Under the elastic launcher, one id for all its starts (tools/hvdrun_elastic.sh): a start
     * that follows a lost host must not wait for the lock the lost rank 0 still holds on a
     * network file system (until its lease runs out), and stop the job elasticity should save. */
    const char *j = getenv("HVDLAB_ELASTIC_RUN");
    if (!j || !*j)
        j = getenv("PMIX_NAMESPACE");
    if (!j || !*j)
        j = getenv("OMPI_MCA_ess_base_jobid");
    return j ? j : "";
}

/* The holder's line, "pid=P host=H job=J since=T", read into buf ("" when not yet written). */
static void read_holder(int fd, char *buf, size_t len)
{
    ssize_t n = pread(fd, buf, len - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
}

/* The value of key in a holder's line, "" when absent. */
static void field(const char *line, const char *key, char *out, size_t len)
{
    out[0] = '\0';
    char pat[16];
    snprintf(pat, sizeof pat, "%s=", key);
    const char *p = strstr(line, pat);
    if (!p)
        return;
    p += strlen(pat);
    size_t n = strcmp(key, "since") ? strcspn(p, " ") : strlen(p); /* since=, the last, has one */
    snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), p);
}

/* The line names a process of this host that has ended: an earlier run's line, left where the
 * holder could not write its own (a read-only lock file), names someone else. */
static int holder_gone(const char *pid, const char *host)
{
    char here[256] = "";
    gethostname(here, sizeof here - 1);
    char *end;
    long p = strtol(pid, &end, 10);
    return !*end && p > 0 && !strcmp(host, here) && kill((pid_t)p, 0) != 0 && errno == ESRCH;
}

static void write_holder(int fd)
{
    char host[256] = "?", since[32], line[512];
    gethostname(host, sizeof host - 1);
    time_t now = time(NULL);
    strftime(since, sizeof since, "%Y-%m-%d %H:%M:%S", localtime(&now));
    int n = snprintf(line, sizeof line, "pid=%ld host=%s job=%s since=%s\n", (long)getpid(), host,
                     job_name(), since);
    /* Best effort: the lock is the flock; the line only makes the message say who holds it. */
    int ok = ftruncate(fd, 0) == 0 && pwrite(fd, line, (size_t)n, 0) == n;
    if (!ok && ftruncate(fd, 0) != 0) {
        /* a torn line stays: the message then names no holder (read_holder finds no pid) */
    }
}

int ckpt_lock_dir(const char *dir, char *err, size_t errlen)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/" LOCK_NAME, dir) >= (int)sizeof path)
        return errmsg_set(err, errlen, dir, "the folder name is too long");
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    /* A lock file this user may not write (another user's run left it 0644 in a shared folder):
     * an flock needs no write access, so it is taken read-only rather than not at all, which let
     * two runs in. Its line then stays the earlier run's (see holder_gone). */
    const int writable = fd >= 0;
    if (fd < 0 && (errno == EACCES || errno == EPERM))
        fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && (errno == ENOENT || errno == EROFS))
        return 0; /* none there, none can be made: the probe that follows names the directory */
    if (fd < 0 && (errno == EMFILE || errno == ENFILE)) /* the process's limit, not the file */
        return errmsg_set(err, errlen, path, "cannot open this log dir's lock file: %s",
                          errmsg_strerror(errno));
    if (fd < 0) /* a directory in its place, a file this user may not even read: unlocked, two
                 * runs could share the folder again */
        return errmsg_set(err, errlen, path, "cannot open this log dir's lock file: %s (remove "
                          "it, or use another --log-dir)", strerror(errno));
    struct stat st = {0};
    if (fstat(fd, &st) == 0 && holds(&st)) {
        close(fd); /* closing another open of the file keeps the flock of the first */
        return 0;
    }
    char line[512] = "";
    for (int waited = 0;; waited += 100) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            break;
        if (errno != EWOULDBLOCK && errno != EINTR) {
            int e = errno;
            close(fd);
            if (writable)
                return 0; /* no flock here (some network file systems): unlocked, as before */
            /* NFS takes an flock as a byte-range lock, which needs write access: read-only, it
             * could lock nothing, and unlocked two runs could share the folder again */
            return errmsg_set(err, errlen, path, "cannot lock this log dir's lock file, which "
                              "this user may not write: %s (remove it, or use another --log-dir)",
                              strerror(e));
        }
        read_holder(fd, line, sizeof line);
        char job[128];
        field(line, "job", job, sizeof job);
        if (*job && !strcmp(job, job_name())) {
            close(fd); /* another rank of this job holds it */
            return 0;
        }
        if (waited >= LOCK_WAIT_MS) {
            char pid[32], host[256], since[32];
            field(line, "pid", pid, sizeof pid);
            field(line, "host", host, sizeof host);
            field(line, "since", since, sizeof since);
            close(fd);
            if (!*pid || holder_gone(pid, host))
                return errmsg_set(err, errlen, dir, "another run is using this --log-dir: wait "
                                  "for it to end, or use another --log-dir");
            return errmsg_set(err, errlen, dir, "another run is using this --log-dir (pid %s on "
                              "%s, since %s): wait for it to end, or use another --log-dir", pid,
                              host, since);
        }
        nanosleep(&(struct timespec){.tv_nsec = 100 * 1000 * 1000}, NULL);
    }
    held_lock *h = malloc(sizeof *h);
    if (!h) {
        close(fd);
        return errmsg_set(err, errlen, dir, "out of memory");
    }
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_fork_handler);
    *h = (held_lock){.dev = st.st_dev, .ino = st.st_ino, .fd = fd, .next = held};
    held = h;
    if (writable)
        write_holder(fd); /* fd stays open, and the flock held, until the process ends */
    return 0;
}
