/* grade.c — run a lab program under mpirun with tracing on and parse its trace files.
 * Public: grade_run_launch, grade_run_prog, grade_read_trace_dir, grade_stopped, grade_run_free,
 *         grade_get, grade_num, grade_is, grade_rank, grade_count, grade_nth, grade_find,
 *         grade_tail.
 */
#include "grade/grade.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/mpirun_cmd.h"

/* Under GRADE_WRAP the run's folder is the student's to write: its files are untrusted input.
 * At most this much of a file is read, and a link or a non-regular file (a FIFO would block)
 * reads as empty. */
#define GRADE_READ_CAP (8 << 20)

/* The file's text (its first GRADE_READ_CAP bytes), or "" when it cannot be read (a run that
 * wrote nothing there). dirfd: the folder it is in, opened without following links. */
static char *slurp_at(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    char *buf = NULL;
    size_t n = 0;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        size_t want = st.st_size < GRADE_READ_CAP ? (size_t)st.st_size : GRADE_READ_CAP;
        buf = malloc(want + 1);
        while (buf && n < want) {
            ssize_t k = read(fd, buf + n, want - n);
            if (k <= 0)
                break;
            n += (size_t)k;
        }
    }
    if (fd >= 0)
        close(fd);
    if (!buf)
        return strdup("");
    buf[n] = '\0';
    return buf;
}

/* The folder, opened without following a link (or -1). */
static int open_dir(const char *path)
{
    return open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

static char *slurp(const char *dir, const char *name)
{
    int d = open_dir(dir);
    char *s = slurp_at(d, name);
    if (d >= 0)
        close(d);
    return s;
}

/* One line "k=v k=\"quoted v\" ..." into e; the strings point into line (modified in place). */
static void parse_line(char *line, grade_event *e)
{
    e->nkv = 0;
    char *p = line;
    while (*p && e->nkv < GRADE_MAX_KV) {
        while (*p == ' ')
            p++;
        char *k = p;
        while (*p && *p != '=' && *p != ' ')
            p++;
        if (*p != '=')
            break;
        *p++ = '\0';
        char *v = p;
        if (*p == '"') { /* quoted: unescape in place */
            char *w = ++v;
            p++;
            while (*p && *p != '"') {
                if (*p == '\\' && p[1]) {
                    p++;
                    *w++ = *p == 'n' ? '\n' : *p;
                    p++;
                } else {
                    *w++ = *p++;
                }
            }
            if (*p)
                p++;
            *w = '\0';
        } else {
            while (*p && *p != ' ')
                p++;
            if (*p)
                *p++ = '\0';
        }
        e->key[e->nkv] = k;
        e->val[e->nkv] = v;
        e->nkv++;
    }
}

static void read_trace_file(int dirfd, const char *path, const char *name, grade_proc *p)
{
    snprintf(p->file, sizeof p->file, "%s", path);
    char *text = slurp_at(dirfd, name);
    p->text = text;
    int cap = 64;
    p->ev = malloc(sizeof *p->ev * (size_t)cap);
    p->nev = 0;
    p->rank = -1;
    p->size = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (p->nev == cap) {
            cap *= 2;
            p->ev = realloc(p->ev, sizeof *p->ev * (size_t)cap);
        }
        parse_line(line, &p->ev[p->nev]);
        if (p->nev == 0) {
            p->rank = (int)grade_num(&p->ev[0], "rank", -1);
            p->size = (int)grade_num(&p->ev[0], "size", 0);
        }
        p->nev++;
    }
}

/* The signal that stopped the grader (Ctrl-C, kill, hangup), 0 while none. */
static volatile sig_atomic_t stop_signal;
static void on_stop(int sig) { stop_signal = sig; }

static void catch_stop_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Waits for child until deadline (now_s() clock); 1 with its status in *st, 0 when the deadline
 * passed or a stop signal came first. */
static int wait_until(pid_t child, double deadline, int *st)
{
    while (!stop_signal && now_s() < deadline) {
        pid_t w = waitpid(child, st, WNOHANG);
        if (w == child || (w < 0 && errno != EINTR))
            return w == child;
        struct timespec nap = {0, 20 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    return 0;
}

/* Every rank the traces name (pid=) that is still running: a rank Open MPI left behind. */
static void kill_traced_ranks(grade_run *r, const char *prog)
{
    for (int i = 0; i < r->nprocs; i++) {
        if (r->procs[i].nev == 0)
            continue;
        pid_t pid = (pid_t)grade_num(&r->procs[i].ev[0], "pid", 0);
        char path[64], exe[4096];
        snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
        ssize_t n = pid > 1 ? readlink(path, exe, sizeof exe - 1) : -1;
        if (n <= 0)
            continue;
        exe[n] = '\0';
        const char *base = strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog;
        const char *ebase = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
        if (strcmp(base, ebase) != 0) /* not our program: a reused pid */
            continue;
        kill(pid, SIGKILL);
        for (int t = 0; t < 100 && readlink(path, exe, sizeof exe - 1) > 0; t++) {
            struct timespec nap = {0, 20 * 1000 * 1000}; /* gone (or a zombie) within 2 s */
            nanosleep(&nap, NULL);
        }
    }
}

/* Stops the job's process group: SIGTERM (mpirun then stops its ranks), SIGKILL after 3 s. */
static void stop_job(pid_t child, int *st)
{
    kill(-child, SIGTERM);
    int done = 0;
    double deadline = now_s() + 3;
    while (!done && now_s() < deadline) {
        done = waitpid(child, st, WNOHANG) == child;
        struct timespec nap = {0, 20 * 1000 * 1000};
        if (!done)
            nanosleep(&nap, NULL);
    }
    kill(-child, SIGKILL);
    if (!done)
        waitpid(child, st, 0);
}

static void read_traces(grade_run *r, const char *tdir)
{
    int fd = open_dir(tdir);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)) && r->nprocs < GRADE_MAX_PROCS) {
        size_t len = strlen(de->d_name);
        if (len < 5 || strcmp(de->d_name + len - 4, ".log") != 0)
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", tdir, de->d_name);
        read_trace_file(dirfd(d), path, de->d_name, &r->procs[r->nprocs++]);
    }
    closedir(d);
}

int grade_run_launch(grade_run *r, const char *prog, const char *launch, const char *workdir,
                     const char *tag, int timeout_s)
{
    memset(r, 0, sizeof *r);
    r->limit = timeout_s;
    char tdir[1024], out[1024], err[1024];
    snprintf(tdir, sizeof tdir, "%s/trace-%s", workdir, tag);
    snprintf(out, sizeof out, "%s.out", tag);
    snprintf(err, sizeof err, "%s.err", tag);
    mkdir(workdir, 0777);
    mkdir(tdir, 0777);
    const char *wrap = getenv("GRADE_WRAP");
    if (wrap && *wrap) /* the sandbox's user, not the grader's, writes the trace */
        chmod(tdir, 0777);
    char dflt[128];
    const char *mpirun = mpirun_cmd(dflt, sizeof dflt);
    /* --bind-to none: mpirun's own binding would hand each rank a core of its own; only
     * hvd_pin_device(hvd_local_rank(), …) may do that here (step 1). */
    snprintf(r->cmd, sizeof r->cmd, "%s --bind-to none %s", mpirun, launch);
    /* GRADE_WRAP: the sandbox the class runner starts the job in (tools/sandbox/run.sh and its
     * options); the job's folder is its current directory, read-write, and mpirun and every
     * rank run inside. The grader stays outside and reads what the job left. */
    char cmd[8192];
    if (wrap && *wrap)
        snprintf(cmd, sizeof cmd, "exec %s --work '%s' -- %s >'%s/%s' 2>'%s/%s' </dev/null", wrap,
                 workdir, r->cmd, workdir, out, workdir, err);
    else
        snprintf(cmd, sizeof cmd, "exec %s >'%s/%s' 2>'%s/%s' </dev/null", r->cmd, workdir, out,
                 workdir, err);
    catch_stop_signals();
    double t0 = now_s();
    pid_t child = fork();
    if (child < 0)
        return -1;
    if (child == 0) {
        setpgid(0, 0); /* the job's own process group: one kill stops all of it */
        setenv("HVDLAB_TRACE", tdir, 1);
        setenv("HVD_CHECK_COLLECTIVES", "1", 1); /* a mismatch stops at once, with its line */
        /* A rank missing from a collective (a call made on some ranks only, that the check
         * cannot see while the others compute): warn after 5 s, stop the job after 10 s. The
         * graded runs' ranks do the same work, so none waits that long for the others. */
        setenv("HVD_STALL_CHECK_TIME_SECONDS", "5", 1);
        setenv("HVD_STALL_SHUTDOWN_TIME_SECONDS", "10", 1);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    setpgid(child, child); /* also here: no race with the kill below */
    int st = 0;
    int finished = wait_until(child, t0 + timeout_s, &st);
    if (!finished) {
        stop_job(child, &st);
        r->status = 124;
        r->interrupted = stop_signal;
    } else {
        r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    kill(-child, SIGKILL); /* whatever of the job is left in its group */
    r->seconds = now_s() - t0;
    r->out = slurp(workdir, out);
    r->err = slurp(workdir, err);
    read_traces(r, tdir);
    /* In the sandbox the ranks end with its pid namespace, and the pids in the traces are that
     * namespace's: not to be killed out here. */
    if (!finished && !(wrap && *wrap))
        kill_traced_ranks(r, prog);
    return 0;
}

int grade_run_prog(grade_run *r, const char *prog, int np, const char *args, const char *workdir,
                   const char *tag, int timeout_s)
{
    char launch[4096];
    snprintf(launch, sizeof launch, "-n %d %s %s", np, prog, args);
    return grade_run_launch(r, prog, launch, workdir, tag, timeout_s);
}

void grade_read_trace_dir(grade_run *r, const char *tdir)
{
    memset(r, 0, sizeof *r);
    r->out = strdup("");
    r->err = strdup("");
    read_traces(r, tdir);
}

int grade_stopped(void) { return stop_signal; }

void grade_run_free(grade_run *r)
{
    for (int i = 0; i < r->nprocs; i++) {
        free(r->procs[i].text);
        free(r->procs[i].ev);
    }
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}

const char *grade_get(const grade_event *e, const char *key)
{
    for (int i = 0; i < e->nkv; i++)
        if (strcmp(e->key[i], key) == 0)
            return e->val[i];
    return NULL;
}

double grade_num(const grade_event *e, const char *key, double dflt)
{
    const char *v = grade_get(e, key);
    if (!v)
        return dflt;
    char *end;
    double x = strtod(v, &end);
    return end == v ? dflt : x;
}

int grade_is(const grade_event *e, const char *event)
{
    const char *v = grade_get(e, "event");
    return v && strcmp(v, event) == 0;
}

grade_proc *grade_rank(grade_run *r, int rank)
{
    for (int i = 0; i < r->nprocs; i++)
        if (strncmp(strrchr(r->procs[i].file, '/') + 1, "rank-", 5) == 0 && r->procs[i].rank == rank)
            return &r->procs[i];
    return NULL;
}

int grade_count(const grade_proc *p, const char *event)
{
    int n = 0;
    for (int i = 0; i < p->nev; i++)
        n += grade_is(&p->ev[i], event);
    return n;
}

const grade_event *grade_nth(const grade_proc *p, const char *event, int n)
{
    for (int i = 0; i < p->nev; i++)
        if (grade_is(&p->ev[i], event) && n-- == 0)
            return &p->ev[i];
    return NULL;
}

const grade_event *grade_find(const grade_proc *p, const char *event, const char *key,
                              const char *val)
{
    for (int i = 0; i < p->nev; i++) {
        const char *v = grade_get(&p->ev[i], key);
        if (grade_is(&p->ev[i], event) && v && strcmp(v, val) == 0)
            return &p->ev[i];
    }
    return NULL;
}

const char *grade_tail(const char *text, int lines)
{
    if (!text)
        return "";
    const char *p = text + strlen(text);
    while (p > text && lines >= 0) {
        p--;
        if (*p == '\n')
            lines--;
    }
    return p == text ? p : p + 1;
}
