/* grade.h — what the step graders use: run a lab program under mpirun with HVDLAB_TRACE and
 * read back what every process did (trace.h lists the events).
 *
 * A grader never looks at the student's source: it runs the built program on a small subset and
 * checks behaviour, so a correct solution written differently from ours passes.
 */
#ifndef HVDLAB_GRADE_H
#define HVDLAB_GRADE_H

#include <stddef.h>

#define GRADE_MAX_KV 40
#define GRADE_MAX_PROCS 16

typedef struct {
    int nkv;
    char *key[GRADE_MAX_KV];
    char *val[GRADE_MAX_KV];
} grade_event;

typedef struct {
    char file[2048];    /* path of rank-R.log or pid-P.log */
    int rank, size;     /* from its first event */
    int nev;
    grade_event *ev;
    char *text;         /* the file's bytes; events point into it */
} grade_proc;

typedef struct {
    char cmd[4096];     /* the command line, for messages */
    int status;         /* mpirun's exit status; 124 = timed out */
    int interrupted;    /* the signal that made the grader stop the job (Ctrl-C …), or 0 */
    int limit;          /* its time limit, seconds */
    double seconds;
    char *out;          /* stdout of the job (all ranks) */
    char *err;          /* stderr */
    int nprocs;
    grade_proc procs[GRADE_MAX_PROCS];
} grade_run;

/* Runs `MPIRUN --bind-to none <launch>` (launch: "-n 2 prog args", or an MPMD line
 * "-n 1 prog args : -n 1 prog other-args") in its own process group with
 * HVDLAB_TRACE=workdir/trace-<tag>, HVD_CHECK_COLLECTIVES=1 and the stall inspector (warning after
 * 5 s, stop after 10 s), and reads the output and the trace files. After timeout_s seconds, or when the grader gets SIGINT,
 * SIGTERM or SIGHUP, it stops the whole job: SIGTERM to the group, SIGKILL 3 s later, and SIGKILL
 * to any rank the traces name that is still running. Returns 0 if it could start it. */
int grade_run_launch(grade_run *r, const char *prog, const char *launch, const char *workdir,
                     const char *tag, int timeout_s);
/* grade_run_launch of "-n np prog args". */
int grade_run_prog(grade_run *r, const char *prog, int np, const char *args, const char *workdir,
                   const char *tag, int timeout_s);
/* Fills r with the trace files of folder tdir only (no run): a kept reference run's. */
void grade_read_trace_dir(grade_run *r, const char *tdir);
/* The signal that interrupted a run (the grader should clean up and stop), or 0. */
int grade_stopped(void);
void grade_run_free(grade_run *r);

const char *grade_get(const grade_event *e, const char *key); /* NULL if absent */
double grade_num(const grade_event *e, const char *key, double dflt);
int grade_is(const grade_event *e, const char *event);        /* event=<event> */

/* The process that reported this rank after hvd_init (NULL if none did). */
grade_proc *grade_rank(grade_run *r, int rank);
int grade_count(const grade_proc *p, const char *event);
/* n-th (0-based) event named event, or NULL. */
const grade_event *grade_nth(const grade_proc *p, const char *event, int n);
/* First event named event whose key has value val, or NULL. */
const grade_event *grade_find(const grade_proc *p, const char *event, const char *key,
                              const char *val);

/* The last lines of a text, for messages. */
const char *grade_tail(const char *text, int lines);

#endif
