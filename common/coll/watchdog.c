/* watchdog.c — the TCP star of watchdog.h, its thread and the notes a dying rank leaves.
 * Public: watchdog_start, watchdog_stop, watchdog_set_context, watchdog_note_fatal,
 *         watchdog_note_signal, watchdog_set_progress_check, watchdog_busy, watchdog_idle. */
#include "coll/watchdog.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/fatal.h"
#include "base/timer.h"

#define MAGIC 0x68766477u   /* "hvdw" */
#define MAX_ADDRS 8
#define CONNECT_WAIT_MS 2000 /* per address of rank 0 */
#define ACCEPT_WAIT_S 20.0
#define RELAY_LINGER_MS 300  /* rank 0: for the others to read its relay before it goes */

enum { NOTE_HELLO = 1, NOTE_BYE, NOTE_SIGNAL, NOTE_FATAL, NOTE_DEATH, NOTE_PING, NOTE_PONG,
       NOTE_ABORT };

/* One message on a socket; fixed size, written with one send(). */
typedef struct {
    uint32_t magic, nonce;
    int32_t kind, rank, sig; /* NOTE_DEATH: rank is the dead one, sig its note's kind */
    int32_t cause_sig;
    char text[488];
} note;

typedef struct {
    int32_t pid;
    char host[60];
} whoami;

static struct {
    int on, rank, size;
    pid_t owner;              /* a forked child's exit() must not stop its parent's watchdog */
    uint32_t nonce;
    whoami *who;              /* (size) */
    int *fd;                  /* (size): rank 0: every peer's socket; others: fd[0] */
    int *left;                /* (size): 1 once a peer said goodbye or was reported */
    note *heard;              /* (size): the last note of each peer (kind 0: none) */
    int wake[2];              /* self-pipe: watchdog_stop wakes the thread */
    pthread_t thread;
    volatile sig_atomic_t dying; /* this rank's own fatal_error is under way */
    void (*context)(char *out, size_t len);
    note signal_note;         /* prebuilt for the signal handlers */
    /* the progress check: the collective this rank is in (main thread writes, under lock) */
    pthread_mutex_t lock;
    int busy;                 /* 1 from the entry handshake's end to the call's end */
    unsigned busy_seq;        /* counts calls: a warning is given once per call */
    double busy_since;
    coll_desc busy_desc;
    double warn_s, shutdown_s; /* 0: no progress check */
    unsigned warned_seq;
    double ping_sent;         /* 0: no ping out */
    int *ponged;              /* (size): answered the last ping */
    struct sigaction old[32];
} W = {.wake = {-1, -1}, .lock = PTHREAD_MUTEX_INITIALIZER};

static const int FATAL_SIGNALS[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGUSR1: return "SIGUSR1";
    case SIGKILL: return "SIGKILL";
    default: return "a signal";
    }
}

/* ---- sending (also from signal handlers: send() is async-signal-safe) ---- */

static void send_note(int fd, const note *n)
{
    if (fd >= 0) {
        ssize_t r = send(fd, n, sizeof *n, MSG_NOSIGNAL);
        (void)r;
    }
}

/* This rank's note to every socket it has: rank 0's go to every peer, the others' to rank 0. */
static void broadcast_note(const note *n)
{
    if (!W.on)
        return;
    for (int r = 0; r < W.size; r++)
        if (r != W.rank && !W.left[r])
            send_note(W.fd[r], n);
}

static note make_note(int kind)
{
    note n;
    memset(&n, 0, sizeof n);
    n.magic = MAGIC;
    n.nonce = W.nonce;
    n.kind = kind;
    n.rank = W.rank;
    return n;
}

void watchdog_note_signal(int sig)
{
    if (!W.on)
        return;
    W.signal_note.sig = sig; /* prebuilt: nothing here that is not async-signal-safe */
    broadcast_note(&W.signal_note);
}

void watchdog_note_fatal(const char *msg)
{
    W.dying = 1;
    if (!W.on)
        return;
    note n = make_note(NOTE_FATAL);
    snprintf(n.text, sizeof n.text, "%s", msg);
    broadcast_note(&n);
}

static void on_fatal_signal(int sig, siginfo_t *info, void *uc)
{
    (void)uc;
    W.dying = 1;
    watchdog_note_signal(sig);
    if (sig >= 0 && sig < 32)
        sigaction(sig, &W.old[sig], NULL); /* whoever was there before (the default, ASan) */
    /* A fault of the kernel's repeats when the instruction runs again, now into the previous
     * handler with its address; a signal sent with kill() or raise() must be sent again. It is
     * blocked while this handler runs, so it arrives on return. */
    if (!info || info->si_code <= 0)
        raise(sig);
}

static void install_signal_notes(void)
{
    W.signal_note = make_note(NOTE_SIGNAL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal_signal;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof FATAL_SIGNALS / sizeof *FATAL_SIGNALS; i++)
        sigaction(FATAL_SIGNALS[i], &sa, &W.old[FATAL_SIGNALS[i]]);
}

static void remove_signal_notes(void)
{
    for (size_t i = 0; i < sizeof FATAL_SIGNALS / sizeof *FATAL_SIGNALS; i++)
        sigaction(FATAL_SIGNALS[i], &W.old[FATAL_SIGNALS[i]], NULL);
}

/* ---- the survivor's line ---- */

static void describe_cause(const note *n, char *out, size_t len)
{
    switch (n ? n->kind : 0) {
    case NOTE_SIGNAL:
        if (n->sig == SIGTERM || n->sig == SIGINT || n->sig == SIGUSR1)
            snprintf(out, len, "exited at a second %s", signal_name(n->sig));
        else
            snprintf(out, len, "killed by %s", signal_name(n->sig));
        break;
    default:
        snprintf(out, len, "vanished without a word: SIGKILL or the out-of-memory killer");
    }
}

/* Prints the line for dead rank `dead` (cause: its note, or NULL) and ends this process. */
static void report_and_exit(int dead, const note *cause)
{
    if (W.dying)
        _exit(1); /* our own fatal_error's line is the one to read */
    char how[600], ctx[1200] = "stopping this rank too";
    describe_cause(cause, how, sizeof how);
    if (W.context)
        W.context(ctx, sizeof ctx);
    fflush(stdout);
    fprintf(stderr, "hvdlab: error: [rank %d] rank %d (pid %d on %s) died: %s; %s\n", W.rank,
            dead, (int)W.who[dead].pid, W.who[dead].host, how, ctx);
    fflush(stderr);
    _exit(1);
}

/* ---- the thread ---- */

/* 1 and the note, 0 on EOF or a broken stream. */
static int read_note(int fd, note *n)
{
    ssize_t got = recv(fd, n, sizeof *n, MSG_WAITALL);
    return got == (ssize_t)sizeof *n && n->magic == MAGIC && n->nonce == W.nonce;
}

/* Rank 0: tell the others that `dead` died and how, and give them a moment to read it. */
static void relay(int dead, const note *cause)
{
    note n = make_note(NOTE_DEATH);
    n.rank = dead;
    if (cause) {
        n.sig = cause->kind;
        n.cause_sig = cause->sig;
        memcpy(n.text, cause->text, sizeof n.text);
    }
    W.left[dead] = 1;
    broadcast_note(&n);
    double t0 = timer_seconds();
    for (int r = 1; r < W.size; r++) /* their EOF: they have read it and gone */
        while (!W.left[r] && W.fd[r] >= 0) {
            int ms = RELAY_LINGER_MS - (int)((timer_seconds() - t0) * 1000);
            struct pollfd p = {W.fd[r], POLLIN, 0};
            note x;
            if (ms <= 0 || poll(&p, 1, ms) <= 0 || !read_note(W.fd[r], &x))
                break;
        }
}

/* Peer r's socket ended or broke. */
static void lost(int r)
{
    if (W.left[r])
        return;
    const note *cause = W.heard[r].kind ? &W.heard[r] : NULL;
    if (W.rank == 0 && W.size > 2)
        relay(r, cause);
    report_and_exit(r, cause);
}

/* Peer r is not watched any more: it said goodbye, or its own error line is out. */
static void forget(int r)
{
    W.left[r] = 1;
    close(W.fd[r]);
    W.fd[r] = -1;
}

static void heard(int r, const note *n)
{
    if (n->kind == NOTE_BYE || n->kind == NOTE_FATAL) {
        forget(r); /* fatal_error printed its one line and takes every rank down (MPI_Abort) */
    } else if (n->kind == NOTE_DEATH && W.rank != 0) {
        note cause = *n;
        cause.kind = n->sig;
        cause.sig = n->cause_sig;
        report_and_exit(n->rank, cause.kind ? &cause : NULL);
    } else if (n->kind == NOTE_PING) {
        note pong = make_note(NOTE_PONG);
        send_note(W.fd[r], &pong);
    } else if (n->kind == NOTE_PONG) {
        W.ponged[r] = 1;
    } else if (n->kind == NOTE_ABORT) {
        W.dying = 1; /* the one line is the sender's */
        _exit(1);
    } else if (n->kind == NOTE_SIGNAL) {
        W.heard[r] = *n;
    }
}

/* ---- the progress check: a call every rank entered that does not end ---- */

/* "stopped (SIGSTOP)" etc. from /proc/PID/stat on this host; "" elsewhere or when running. */
static const char *process_state(int r)
{
    char host[sizeof W.who[0].host] = "", path[64], buf[512];
    gethostname(host, sizeof host - 1);
    if (strcmp(host, W.who[r].host) != 0)
        return "";
    snprintf(path, sizeof path, "/proc/%d/stat", (int)W.who[r].pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return ", gone";
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *c = strrchr(buf, ')'); /* the state follows the command name */
    char st = c && c[1] == ' ' ? c[2] : '?';
    return st == 'T' ? ", stopped (SIGSTOP?)" : st == 't' ? ", stopped by a debugger"
         : st == 'D' ? ", in uninterruptible sleep" : st == 'Z' ? ", a zombie" : "";
}

/* The ranks that did not answer the ping: "rank 1 (pid 42 on vm, stopped (SIGSTOP?))". */
static int silent_ranks(char *out, size_t len)
{
    size_t o = 0;
    int n = 0;
    out[0] = '\0';
    for (int r = 0; r < W.size && o < len; r++) {
        if (r == W.rank || W.ponged[r] || W.left[r] || (W.rank != 0 && r != 0))
            continue;
        o += (size_t)snprintf(out + o, len - o, "%srank %d (pid %d on %s%s)", n ? ", " : "", r,
                              (int)W.who[r].pid, W.who[r].host, process_state(r));
        n++;
    }
    return n;
}

static void progress_tick(void)
{
    pthread_mutex_lock(&W.lock);
    int busy = W.busy;
    unsigned seq = W.busy_seq;
    double since = W.busy_since;
    coll_desc d = W.busy_desc;
    pthread_mutex_unlock(&W.lock);
    double now = timer_seconds();
    if (!busy || now - since < W.warn_s) {
        W.ping_sent = 0;
        return;
    }
    if (W.ping_sent == 0) { /* who still answers? a stopped process cannot */
        memset(W.ponged, 0, (size_t)W.size * sizeof *W.ponged);
        note ping = make_note(NOTE_PING);
        broadcast_note(&ping);
        W.ping_sent = now;
        return;
    }
    if (now - W.ping_sent < 1.0)
        return;
    char call[200], who[2048];
    coll_desc_format(&d, 0, call, sizeof call);
    int silent = silent_ranks(who, sizeof who);
    W.ping_sent = 0; /* the next tick asks again */
    if (!silent && W.rank != 0)
        return; /* rank 0 answers, and speaks for everyone */
    if (W.shutdown_s > 0 && now - since >= W.shutdown_s) {
        W.dying = 1;
        note abort_note = make_note(NOTE_ABORT);
        broadcast_note(&abort_note);
        fflush(stdout);
        fprintf(stderr, "hvdlab: error: [rank %d] stall: %s, entered by every rank, has not "
                "finished after %g s (HVD_STALL_SHUTDOWN_TIME_SECONDS): %s%s; stopping every "
                "rank\n", W.rank, call, W.shutdown_s, silent ? "not answering: " : "",
                silent ? who : "every rank answers (a network that does not move?)");
        fflush(stderr);
        _exit(1);
    }
    if (W.warned_seq != seq) {
        W.warned_seq = seq;
        fprintf(stderr, "hvdlab: warning: [rank %d] stall: %s, entered by every rank, has not "
                "finished after %g s (HVD_STALL_CHECK_TIME_SECONDS): %s%s\n", W.rank, call,
                W.warn_s, silent ? "not answering: " : "",
                silent ? who : "every rank answers (a network that does not move?)");
        fflush(stderr);
    }
}

void watchdog_busy(const coll_desc *d)
{
    if (!W.on || W.warn_s <= 0)
        return;
    pthread_mutex_lock(&W.lock);
    W.busy = 1;
    W.busy_seq++;
    W.busy_since = timer_seconds();
    W.busy_desc = *d;
    pthread_mutex_unlock(&W.lock);
}

void watchdog_idle(void)
{
    if (!W.on || W.warn_s <= 0)
        return;
    pthread_mutex_lock(&W.lock);
    W.busy = 0;
    pthread_mutex_unlock(&W.lock);
}

void watchdog_set_progress_check(double warn_s, double shutdown_s)
{
    W.warn_s = warn_s;
    W.shutdown_s = shutdown_s;
}

static void *watch(void *arg)
{
    (void)arg;
    struct pollfd *p = calloc((size_t)W.size + 1, sizeof *p);
    int *who = calloc((size_t)W.size + 1, sizeof *who);
    if (!p || !who)
        return NULL;
    for (;;) {
        int n = 0, timeout = W.warn_s > 0 ? 250 : -1; /* the progress check's tick */
        p[n++] = (struct pollfd){W.wake[0], POLLIN, 0};
        for (int r = 0; r < W.size; r++)
            if (r != W.rank && !W.left[r] && W.fd[r] >= 0) {
                who[n] = r;
                p[n++] = (struct pollfd){W.fd[r], POLLIN, 0};
            }
        if (poll(p, (nfds_t)n, timeout) < 0 && errno != EINTR)
            break;
        if (p[0].revents)
            break; /* watchdog_stop */
        for (int i = 1; i < n; i++) {
            int r = who[i];
            note x;
            if (p[i].revents & (POLLIN | POLLHUP | POLLERR)) {
                if (read_note(W.fd[r], &x))
                    heard(r, &x);
                else
                    lost(r);
            }
        }
        if (W.warn_s > 0)
            progress_tick();
    }
    free(p);
    free(who);
    return NULL;
}

/* ---- set-up ---- */

typedef struct {
    uint32_t nonce;
    int32_t port, naddr;
    uint32_t addr[MAX_ADDRS]; /* IPv4, network order: the others' first, loopback last */
} rendezvous;

static int listen_any(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 128) ||
        getsockname(fd, (struct sockaddr *)&a, &len)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

static void my_addresses(rendezvous *rv)
{
    struct ifaddrs *ifs = NULL;
    uint32_t lo = htonl(INADDR_LOOPBACK);
    if (getifaddrs(&ifs) == 0) {
        for (struct ifaddrs *i = ifs; i && rv->naddr < MAX_ADDRS - 1; i = i->ifa_next)
            if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET) {
                uint32_t v = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
                if ((ntohl(v) >> 24) != 127)
                    rv->addr[rv->naddr++] = v;
            }
        freeifaddrs(ifs);
    }
    rv->addr[rv->naddr++] = lo; /* last: the same host only */
}

/* A connected socket to addr:port within CONNECT_WAIT_MS, else -1. */
static int connect_to(uint32_t addr, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = addr;
    int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
    if (rc != 0 && errno == EINPROGRESS) {
        struct pollfd p = {fd, POLLOUT, 0};
        int err = 0;
        socklen_t len = sizeof err;
        rc = poll(&p, 1, CONNECT_WAIT_MS) == 1 &&
                     getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0
                 ? 0 : -1;
    }
    if (rc != 0) {
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

/* Rank 0: the others' hellos, until every rank is in or the wait is over. 1 if all came. */
static int accept_all(int lfd)
{
    int missing = W.size - 1;
    double t0 = timer_seconds();
    while (missing > 0) {
        int ms = (int)((ACCEPT_WAIT_S - (timer_seconds() - t0)) * 1000);
        struct pollfd p = {lfd, POLLIN, 0};
        if (ms <= 0 || poll(&p, 1, ms) <= 0)
            break;
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        struct timeval tv = {2, 0}; /* a stranger that says nothing is not waited for */
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        note n;
        if (read_note(fd, &n) && n.kind == NOTE_HELLO && n.rank > 0 && n.rank < W.size &&
            W.fd[n.rank] < 0) {
            struct timeval none = {0, 0};
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
            W.fd[n.rank] = fd;
            missing--;
        } else {
            close(fd);
        }
    }
    return missing == 0;
}

static void close_all(void)
{
    for (int r = 0; W.fd && r < W.size; r++)
        if (W.fd[r] >= 0) {
            close(W.fd[r]);
            W.fd[r] = -1;
        }
}

static void free_all(void)
{
    close_all();
    free(W.who);
    free(W.fd);
    free(W.left);
    free(W.heard);
    free(W.ponged);
    W.ponged = NULL;
    W.who = NULL;
    W.fd = W.left = NULL;
    W.heard = NULL;
}

static void at_exit(void) { watchdog_stop(); }

void watchdog_start(MPI_Comm comm)
{
    static int registered;
    if (W.on)
        return;
    MPI_Comm_rank(comm, &W.rank);
    MPI_Comm_size(comm, &W.size);
    const char *off = getenv("HVD_DEAD_RANK_CHECK_DISABLE");
    int want = !(off && *off && strcmp(off, "0") != 0);
    MPI_Allreduce(MPI_IN_PLACE, &want, 1, MPI_INT, MPI_MIN, comm); /* off on one: off on all */
    if (W.size < 2 || !want)
        return;
    size_t n = (size_t)W.size;
    W.who = calloc(n, sizeof *W.who);
    W.fd = malloc(n * sizeof *W.fd);
    W.left = calloc(n, sizeof *W.left);
    W.heard = calloc(n, sizeof *W.heard);
    W.ponged = calloc(n, sizeof *W.ponged);
    if (!W.who || !W.fd || !W.left || !W.heard || !W.ponged)
        fatal_error("dead-rank watchdog: out of memory for %d ranks", W.size);
    int ok = 1;
    for (int r = 0; r < W.size; r++)
        W.fd[r] = -1;
    whoami me;
    memset(&me, 0, sizeof me);
    me.pid = (int32_t)getpid();
    gethostname(me.host, sizeof me.host - 1);
    rendezvous rv;
    memset(&rv, 0, sizeof rv);
    int lfd = -1;
    if (W.rank == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        rv.nonce = ((uint32_t)ts.tv_nsec ^ ((uint32_t)getpid() << 16)) | 1u;
        lfd = listen_any(&rv.port);
        if (lfd >= 0)
            my_addresses(&rv);
    }
    MPI_Bcast(&rv, (int)sizeof rv, MPI_BYTE, 0, comm);
    MPI_Allgather(&me, (int)sizeof me, MPI_BYTE, W.who, (int)sizeof me, MPI_BYTE, comm);
    W.nonce = rv.nonce;
    if (W.rank == 0) {
        ok = ok && lfd >= 0 && accept_all(lfd);
        if (lfd >= 0)
            close(lfd);
    } else if (ok && rv.naddr > 0) {
        int fd = -1;
        for (int i = 0; i < rv.naddr && i < MAX_ADDRS && fd < 0; i++)
            fd = connect_to(rv.addr[i], rv.port);
        note hello = make_note(NOTE_HELLO);
        if (fd >= 0 && send(fd, &hello, sizeof hello, MSG_NOSIGNAL) != (ssize_t)sizeof hello) {
            close(fd);
            fd = -1;
        }
        W.fd[0] = fd;
        ok = fd >= 0;
    } else {
        ok = 0;
    }
    int all = ok;
    MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, comm);
    if (all && pipe2(W.wake, O_CLOEXEC) != 0)
        all = 0;
    MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, comm);
    if (!all) {
        if (W.rank == 0)
            fprintf(stderr, "hvdlab: warning: dead-rank watchdog off: not every rank reached "
                    "rank 0 over TCP (a rank that dies will not be named)\n");
        if (W.wake[0] >= 0) {
            close(W.wake[0]);
            close(W.wake[1]);
            W.wake[0] = W.wake[1] = -1;
        }
        free_all();
        return;
    }
    W.on = 1;
    W.owner = getpid();
    install_signal_notes();
    if (pthread_create(&W.thread, NULL, watch, NULL) != 0) {
        W.on = 0;
        remove_signal_notes();
        free_all();
        return;
    }
    if (!registered) {
        registered = 1;
        atexit(at_exit);
    }
}

void watchdog_stop(void)
{
    if (!W.on || getpid() != W.owner)
        return;
    ssize_t r = write(W.wake[1], "x", 1);
    (void)r;
    pthread_join(W.thread, NULL);
    W.on = 0; /* the handlers send nothing from here */
    remove_signal_notes();
    note bye = make_note(NOTE_BYE);
    for (int p = 0; p < W.size; p++)
        if (p != W.rank && !W.left[p])
            send_note(W.fd[p], &bye);
    close(W.wake[0]);
    close(W.wake[1]);
    W.wake[0] = W.wake[1] = -1;
    free_all();
}

void watchdog_set_context(void (*fn)(char *out, size_t len)) { W.context = fn; }
