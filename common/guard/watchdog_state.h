/* watchdog_state.h — what the watchdog's files share (watchdog.h): the notes on the wire, the
 * one state of this process (wd) and the note helpers (watchdog_notes.c). Not for other files.
 * Public: watchdog_make_note, watchdog_send_note, watchdog_broadcast_note, watchdog_read_note,
 *         watchdog_stop_every_rank, watchdog_progress_tick, watchdog_heard_shutdown,
 *         watchdog_await_counts. */
#ifndef HVDLAB_WATCHDOG_STATE_H
#define HVDLAB_WATCHDOG_STATE_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "guard/coll_check.h"

#define WATCHDOG_MAGIC 0x68766477u /* "hvdw" */

enum { NOTE_HELLO = 1, NOTE_BYE, NOTE_SIGNAL, NOTE_FATAL, NOTE_DEATH, NOTE_PING, NOTE_PONG,
       NOTE_ABORT, NOTE_SHUTDOWN };

/* One message on a socket; fixed size, written with one send(). */
typedef struct {
    uint32_t magic, nonce;
    int32_t kind, rank, sig; /* NOTE_DEATH: rank is the dead one, sig its note's kind */
    int32_t cause_sig;
    int64_t calls; /* NOTE_SHUTDOWN: the collective calls the rank made before hvd_shutdown */
    char text[480];
} note;

typedef struct {
    int32_t pid;
    char host[60];
} whoami;

typedef void (*watchdog_context_fn)(char *out, size_t len);

/* Who writes what: the main thread sets up and tears down (before the thread starts, after it
 * ends); on, left, dying and context are also read or written by the other side (the thread,
 * fatal_error, the signal handlers) while both run, so they are atomic; fd[] does not change
 * while the thread runs (a socket is closed at watchdog_stop only, so a note can never go to a
 * file that reused its number). */
typedef struct {
    atomic_int on;
    int rank, size;
    pid_t owner;              /* a forked child's exit() must not stop its parent's watchdog */
    uint32_t nonce;
    whoami *who;              /* (size) */
    int *fd;                  /* (size): rank 0: every peer's socket; others: fd[0] */
    atomic_int *left;         /* (size): 1 once a peer said goodbye or was reported */
    note *heard;              /* (size): the last note of each peer (kind 0: none) */
    int wake[2];              /* self-pipe: watchdog_stop wakes the thread */
    pthread_t thread;
    atomic_int dying;         /* this rank's own fatal_error is under way */
    _Atomic(watchdog_context_fn) context;
    note signal_note;         /* prebuilt for the signal handlers */
    /* the progress check: the collective this rank is in (main thread writes, under lock) */
    pthread_mutex_t lock;
    int busy;                 /* 1 from the entry handshake's end to the call's end */
    unsigned busy_seq;        /* counts calls: a warning is given once per call */
    double busy_since;
    coll_desc busy_desc;      /* the call this rank is in (also the shutdown rule's) */
    double warn_s, shutdown_s; /* 0: no progress check */
    unsigned warned_seq;
    double ping_sent;         /* 0: no ping out */
    int *ponged;              /* (size): answered the last ping */
    /* the shutdown rule without the entry handshake (watchdog_leave.c), under lock */
    int64_t calls;            /* the collective calls this rank has entered (busy_desc: the last) */
    int64_t *shut_calls;      /* (size): a peer's calls before its hvd_shutdown; -1: not shut */
    int shutting;             /* this rank is in hvd_shutdown */
    struct sigaction old[32];
} watchdog_state;

extern watchdog_state wd;

note watchdog_make_note(int kind);
/* Async-signal-safe (send()). */
void watchdog_send_note(int fd, const note *n);
/* This rank's note to every socket it has: rank 0's go to every peer, the others' to rank 0. */
void watchdog_broadcast_note(const note *n);
/* 1 and the note, 0 on EOF or a broken stream. */
int watchdog_read_note(int fd, note *n);
/* This rank's error line ("hvdlab: error: [rank R] " + line) after telling the others to exit
 * silently (rank 0 relays it), then _exit(1): the progress check's and the shutdown rule's end. */
void watchdog_stop_every_rank(const char *line) __attribute__((noreturn));

/* The progress check's tick, on the watchdog's thread (watchdog_progress.c). */
void watchdog_progress_tick(void);

/* On the watchdog's thread: peer r's NOTE_SHUTDOWN (watchdog_leave.c). */
void watchdog_heard_shutdown(int r, const note *n);

/* In watchdog_stop after a shutdown under the rule: rank 0 waits for every count, the others for
 * rank 0's goodbye (watchdog_leave.c). */
void watchdog_await_counts(void);

#endif
