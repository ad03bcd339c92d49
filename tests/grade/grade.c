/* grade.c — run a lab program under mpirun with tracing on and parse its trace files.
 * Public: grade_run_prog, grade_run_free, grade_get, grade_num, grade_is, grade_rank,
 *         grade_count, grade_nth, grade_find, grade_tail.
 */
#include "grade/grade.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/file_io.h"
#include "lib/mpirun_cmd.h"

/* The file's text, or "" when it cannot be read (a run that wrote nothing there). */
static char *slurp(const char *path)
{
    char *s = file_read(path, NULL);
    return s ? s : strdup("");
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

static void read_trace_file(const char *path, grade_proc *p)
{
    snprintf(p->file, sizeof p->file, "%s", path);
    char *text = slurp(path);
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

int grade_run_prog(grade_run *r, const char *prog, int np, const char *args, const char *workdir,
                   const char *tag, int timeout_s)
{
    memset(r, 0, sizeof *r);
    char tdir[1024], out[1024], err[1024];
    snprintf(tdir, sizeof tdir, "%s/trace-%s", workdir, tag);
    snprintf(out, sizeof out, "%s/%s.out", workdir, tag);
    snprintf(err, sizeof err, "%s/%s.err", workdir, tag);
    mkdir(workdir, 0777);
    mkdir(tdir, 0777);
    char dflt[128];
    const char *mpirun = mpirun_cmd(dflt, sizeof dflt);
    snprintf(r->cmd, sizeof r->cmd, "%s -n %d %s %s", mpirun, np, prog, args);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "HVDLAB_TRACE='%s' timeout %d %s >'%s' 2>'%s' </dev/null", tdir,
             timeout_s, r->cmd, out, err);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int st = system(cmd);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    r->seconds = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    if (st == -1)
        return -1;
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r->out = slurp(out);
    r->err = slurp(err);
    DIR *d = opendir(tdir);
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d)) && r->nprocs < GRADE_MAX_PROCS) {
        size_t len = strlen(de->d_name);
        if (len < 5 || strcmp(de->d_name + len - 4, ".log") != 0)
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", tdir, de->d_name);
        read_trace_file(path, &r->procs[r->nprocs++]);
    }
    closedir(d);
    return 0;
}

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
