/* watchdog.c — the TCP star of watchdog.h: set-up, the thread that watches the sockets, the
 * survivor's line and the fatal-signal handlers that leave a note. The sockets are
 * watchdog_net.c's, the notes watchdog_notes.c's, the progress check watchdog_progress.c's, the
 * shutdown rule watchdog_leave.c's.
 * Public: watchdog_start, watchdog_stop. */
#include "guard/watchdog.h"

#include <errno.h>
#include <fcntl.h>
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

#include "base/env_switch.h"
#include "base/fatal.h"
#include "base/timer.h"
#include "guard/watchdog_net.h"
#include "guard/watchdog_state.h"

#define ACCEPT_WAIT_S 20.0
#define CONNECT_WAIT_MS 2000 /* per address of rank 0 */
#define RELAY_LINGER_MS 300  /* rank 0: for the others to read its relay before it goes */

static const int FATAL_SIGNALS[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
/* The signals whose default action ends the process: noted only while that default stands (not
 * where Open MPI or the program ignores or handles one; stop.h's handlers replace the first three
 * later and note their own exits). */
static const int ENDING_SIGNALS[] = {SIGTERM, SIGINT, SIGUSR1, SIGHUP, SIGQUIT, SIGUSR2, SIGPIPE,
                                     SIGALRM};
#define COUNT(a) (sizeof(a) / sizeof *(a))

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
    case SIGHUP: return "SIGHUP";
    case SIGQUIT: return "SIGQUIT";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGKILL: return "SIGKILL";
    default: return "a signal";
    }
}

static void on_fatal_signal(int sig, siginfo_t *info, void *uc)
{
    (void)uc;
    wd.dying = 1;
    watchdog_note_signal(sig, "killed by");
    if (sig >= 0 && sig < 32)
        sigaction(sig, &wd.old[sig], NULL); /* whoever was there before (the default, ASan) */
    /* A fault of the kernel's repeats when the instruction runs again, now into the previous
     * handler with its address; a signal sent with kill() or raise(), or one that is no fault,
     * must be sent again. It is blocked while this handler runs, so it arrives on return. */
    int fault = sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL;
    if (!info || info->si_code <= 0 || !fault)
        raise(sig);
}

static void install_signal_notes(void)
{
    wd.signal_note = watchdog_make_note(NOTE_SIGNAL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal_signal;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < COUNT(FATAL_SIGNALS); i++)
        sigaction(FATAL_SIGNALS[i], &sa, &wd.old[FATAL_SIGNALS[i]]);
    for (size_t i = 0; i < COUNT(ENDING_SIGNALS); i++) {
        int sig = ENDING_SIGNALS[i];
        sigaction(sig, NULL, &wd.old[sig]);
        if (wd.old[sig].sa_handler == SIG_DFL)
            sigaction(sig, &sa, NULL);
    }
}

static void remove_signal_notes(void)
{
    for (size_t i = 0; i < COUNT(FATAL_SIGNALS); i++)
        sigaction(FATAL_SIGNALS[i], &wd.old[FATAL_SIGNALS[i]], NULL);
    for (size_t i = 0; i < COUNT(ENDING_SIGNALS); i++) { /* unless stop.h's handler came since */
        struct sigaction now;
        sigaction(ENDING_SIGNALS[i], NULL, &now);
        if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_fatal_signal)
            sigaction(ENDING_SIGNALS[i], &wd.old[ENDING_SIGNALS[i]], NULL);
    }
}

/* ---- the survivor's line ---- */

static void describe_cause(const note *n, char *out, size_t len)
{
    switch (n ? n->kind : 0) {
    case NOTE_SIGNAL: { /* "killed by", "exited at a second", ... (watchdog_note_signal) */
        const char *how = n->text[0] ? n->text : "killed by"; /* the text may fill its field */
        snprintf(out, len, "%.*s %s", (int)strnlen(how, sizeof n->text), how,
                 signal_name(n->sig));
        break;
    }
    default:
        snprintf(out, len, "vanished without a word: SIGKILL or the out-of-memory killer");
    }
}

/* Prints the line for dead rank `dead` (cause: its note, or NULL) and ends this process. */
static void report_and_exit(int dead, const note *cause)
{
    if (wd.dying)
        _exit(1); /* our own fatal_error's line is the one to read */
    char how[600], ctx[1200] = "stopping this rank too";
    describe_cause(cause, how, sizeof how);
    watchdog_context_fn context = wd.context;
    if (context)
        context(ctx, sizeof ctx);
    fflush(stdout);
    fprintf(stderr, "hvdlab: error: [rank %d] rank %d (pid %d on %s) died: %s; %s\n", wd.rank,
            dead, (int)wd.who[dead].pid, wd.who[dead].host, how, ctx);
    fflush(stderr);
    _exit(1);
}

/* ---- the thread ---- */

/* Rank 0: tell the others that `dead` died and how, and give them a moment to read it. */
static void relay(int dead, const note *cause)
{
    note n = watchdog_make_note(NOTE_DEATH);
    n.rank = dead;
    if (cause) {
        n.sig = cause->kind;
        n.cause_sig = cause->sig;
        memcpy(n.text, cause->text, sizeof n.text);
    }
    wd.left[dead] = 1;
    watchdog_broadcast_note(&n);
    double t0 = timer_seconds();
    for (int r = 1; r < wd.size; r++) /* their EOF: they have read it and gone */
        while (!wd.left[r] && wd.fd[r] >= 0) {
            int ms = RELAY_LINGER_MS - (int)((timer_seconds() - t0) * 1000);
            struct pollfd p = {wd.fd[r], POLLIN, 0};
            note x;
            if (ms <= 0 || poll(&p, 1, ms) <= 0 || !watchdog_read_note(wd.fd[r], &x))
                break;
        }
}

/* Peer r's socket ended or broke. */
static void lost(int r)
{
    if (wd.left[r])
        return;
    if (wd.shut_calls[r] >= 0) { /* in hvd_shutdown (its count came): a socket that ends now is */
        wd.left[r] = 1;          /* its goodbye, maybe reset by a note sent as it closed */
        return;
    }
    const note *cause = wd.heard[r].kind ? &wd.heard[r] : NULL;
    if (wd.rank == 0 && wd.size > 2)
        relay(r, cause);
    report_and_exit(r, cause);
}

/* Peer r is not watched any more: it said goodbye, or its own error line is out. Its socket
 * stays open until watchdog_stop: closed here, its number could be reused by a file or MPI's
 * own socket while another thread or a signal handler is about to send a note on it. */
static void forget(int r) { wd.left[r] = 1; }

static void heard(int r, const note *n)
{
    if (n->kind == NOTE_BYE || n->kind == NOTE_FATAL) {
        forget(r); /* fatal_error printed its one line and takes every rank down (MPI_Abort) */
    } else if (n->kind == NOTE_DEATH && wd.rank != 0) {
        note cause = *n;
        cause.kind = n->sig;
        cause.sig = n->cause_sig;
        report_and_exit(n->rank, cause.kind ? &cause : NULL);
    } else if (n->kind == NOTE_PING) {
        note pong = watchdog_make_note(NOTE_PONG);
        watchdog_send_note(wd.fd[r], &pong);
    } else if (n->kind == NOTE_PONG) {
        wd.ponged[r] = 1;
    } else if (n->kind == NOTE_ABORT) {
        wd.dying = 1; /* the one line is the sender's */
        if (wd.rank == 0) { /* the others hear only rank 0: they go too, as silently */
            note abort_note = watchdog_make_note(NOTE_ABORT);
            watchdog_broadcast_note(&abort_note);
        }
        _exit(1);
    } else if (n->kind == NOTE_SHUTDOWN) { /* n->rank: the rank gone (rank 0 relays others') */
        if (n->rank >= 0 && n->rank < wd.size && n->rank != wd.rank)
            watchdog_heard_shutdown(n->rank, n);
    } else if (n->kind == NOTE_SIGNAL) {
        wd.heard[r] = *n;
    }
}


static void *watch(void *arg)
{
    (void)arg;
    /* Signals sent to the process (SIGTERM, a profiler's timer) go to the other threads: their
     * handlers expect the main thread, and this one then sees no EINTR. Faults stay on. */
    sigset_t async;
    sigfillset(&async);
    for (size_t i = 0; i < COUNT(FATAL_SIGNALS); i++)
        sigdelset(&async, FATAL_SIGNALS[i]);
    sigdelset(&async, SIGTRAP);
    pthread_sigmask(SIG_BLOCK, &async, NULL);
    struct pollfd *p = calloc((size_t)wd.size + 1, sizeof *p);
    int *who = calloc((size_t)wd.size + 1, sizeof *who);
    if (!p || !who)
        return NULL;
    for (;;) {
        int n = 0, timeout = wd.warn_s > 0 ? 250 : -1; /* the progress check's tick */
        p[n++] = (struct pollfd){wd.wake[0], POLLIN, 0};
        for (int r = 0; r < wd.size; r++)
            if (r != wd.rank && !wd.left[r] && wd.fd[r] >= 0) {
                who[n] = r;
                p[n++] = (struct pollfd){wd.fd[r], POLLIN, 0};
            }
        if (poll(p, (nfds_t)n, timeout) < 0 && errno != EINTR)
            break;
        if (p[0].revents)
            break; /* watchdog_stop */
        for (int i = 1; i < n; i++) {
            int r = who[i];
            note x;
            if (p[i].revents & (POLLIN | POLLHUP | POLLERR)) {
                if (watchdog_read_note(wd.fd[r], &x))
                    heard(r, &x);
                else
                    lost(r);
            }
        }
        if (wd.warn_s > 0)
            watchdog_progress_tick();
    }
    free(p);
    free(who);
    return NULL;
}

/* ---- set-up ---- */

/* Rank 0: the others' hellos, until every rank is in or the wait is over. 1 if all came. */
static int accept_all(int lfd)
{
    int missing = wd.size - 1;
    double t0 = timer_seconds();
    while (missing > 0) {
        int ms = (int)((ACCEPT_WAIT_S - (timer_seconds() - t0)) * 1000);
        struct pollfd p = {lfd, POLLIN, 0};
        int ready = ms > 0 ? poll(&p, 1, ms) : 0;
        if (ready < 0 && errno == EINTR)
            continue; /* a signal (a profiler's timer) does not end the wait */
        if (ready <= 0)
            break;
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        struct timeval tv = {2, 0}; /* a stranger that says nothing is not waited for */
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        note n;
        if (watchdog_read_note(fd, &n) && n.kind == NOTE_HELLO && n.rank > 0 &&
            n.rank < wd.size && wd.fd[n.rank] < 0) {
            struct timeval none = {0, 0};
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
            wd.fd[n.rank] = fd;
            missing--;
        } else {
            close(fd);
        }
    }
    return missing == 0;
}

static void close_all(void)
{
    for (int r = 0; wd.fd && r < wd.size; r++)
        if (wd.fd[r] >= 0) {
            close(wd.fd[r]);
            wd.fd[r] = -1;
        }
}

static void free_all(void)
{
    close_all();
    free(wd.who);
    free(wd.fd);
    free(wd.left);
    free(wd.heard);
    free(wd.ponged);
    free(wd.shut_calls);
    wd.ponged = NULL;
    wd.shut_calls = NULL;
    wd.who = NULL;
    wd.fd = NULL;
    wd.left = NULL;
    wd.heard = NULL;
}

static void at_exit(void) { watchdog_stop(); }

/* A forked child is not the rank: its copies of the sockets would hide the rank's death from
 * the others (no EOF while the child lives) and its crash would be the rank's note. It closes
 * them and has no watchdog (no thread came along). Only close() and sigaction() here. */
static void in_forked_child(void)
{
    if (!wd.on)
        return;
    wd.on = 0;
    remove_signal_notes();
    for (int r = 0; r < wd.size; r++)
        if (wd.fd[r] >= 0)
            close(wd.fd[r]);
    close(wd.wake[0]);
    close(wd.wake[1]);
}

void watchdog_start(MPI_Comm comm)
{
    static int registered;
    if (wd.on)
        return;
    MPI_Comm_rank(comm, &wd.rank);
    MPI_Comm_size(comm, &wd.size);
    int want = !env_switch("HVD_DEAD_RANK_CHECK_DISABLE", 0);
    MPI_Allreduce(MPI_IN_PLACE, &want, 1, MPI_INT, MPI_MIN, comm); /* off on one: off on all */
    if (wd.size < 2 || !want)
        return;
    size_t n = (size_t)wd.size;
    wd.who = calloc(n, sizeof *wd.who);
    wd.fd = malloc(n * sizeof *wd.fd);
    wd.left = calloc(n, sizeof *wd.left);
    wd.heard = calloc(n, sizeof *wd.heard);
    wd.ponged = calloc(n, sizeof *wd.ponged);
    wd.shut_calls = malloc(n * sizeof *wd.shut_calls);
    if (!wd.who || !wd.fd || !wd.left || !wd.heard || !wd.ponged || !wd.shut_calls)
        fatal_error("dead-rank watchdog: out of memory for %d ranks", wd.size);
    int ok = 1;
    for (int r = 0; r < wd.size; r++)
        wd.fd[r] = -1, wd.shut_calls[r] = -1;
    wd.calls = 0;
    wd.shutting = 0;
    whoami me;
    memset(&me, 0, sizeof me);
    me.pid = (int32_t)getpid();
    gethostname(me.host, sizeof me.host - 1);
    struct {
        uint32_t nonce;
        int32_t port, naddr;
        uint32_t addr[WATCHDOG_NET_MAX_ADDRS]; /* network order: the others' first, loopback last */
    } rv;
    memset(&rv, 0, sizeof rv);
    int lfd = -1;
    if (wd.rank == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        rv.nonce = ((uint32_t)ts.tv_nsec ^ ((uint32_t)getpid() << 16)) | 1u;
        lfd = watchdog_net_listen(&rv.port);
        if (lfd >= 0)
            rv.naddr = watchdog_net_addresses(rv.addr, WATCHDOG_NET_MAX_ADDRS);
    }
    MPI_Bcast(&rv, (int)sizeof rv, MPI_BYTE, 0, comm);
    MPI_Allgather(&me, (int)sizeof me, MPI_BYTE, wd.who, (int)sizeof me, MPI_BYTE, comm);
    wd.nonce = rv.nonce;
    if (wd.rank == 0) {
        ok = ok && lfd >= 0 && accept_all(lfd);
        if (lfd >= 0)
            close(lfd);
    } else if (ok && rv.naddr > 0) {
        int fd = -1;
        for (int i = 0; i < rv.naddr && i < WATCHDOG_NET_MAX_ADDRS && fd < 0; i++)
            fd = watchdog_net_connect(rv.addr[i], rv.port, CONNECT_WAIT_MS);
        note hello = watchdog_make_note(NOTE_HELLO);
        if (fd >= 0 && watchdog_net_send(fd, &hello, sizeof hello) != (ssize_t)sizeof hello) {
            close(fd);
            fd = -1;
        }
        wd.fd[0] = fd;
        ok = fd >= 0;
    } else {
        ok = 0;
    }
    int all = ok;
    MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, comm);
    if (all && pipe2(wd.wake, O_CLOEXEC) != 0)
        all = 0;
    MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, comm);
    if (!all) {
        if (wd.rank == 0)
            fprintf(stderr, "hvdlab: warning: dead-rank watchdog off: not every rank reached "
                    "rank 0 over TCP (a rank that dies will not be named)\n");
        if (wd.wake[0] >= 0) {
            close(wd.wake[0]);
            close(wd.wake[1]);
            wd.wake[0] = wd.wake[1] = -1;
        }
        free_all();
        return;
    }
    wd.on = 1;
    wd.owner = getpid();
    install_signal_notes();
    if (pthread_create(&wd.thread, NULL, watch, NULL) != 0) {
        wd.on = 0;
        remove_signal_notes();
        close(wd.wake[0]);
        close(wd.wake[1]);
        wd.wake[0] = wd.wake[1] = -1;
        free_all();
        return;
    }
    if (!registered) {
        registered = 1;
        atexit(at_exit);
        pthread_atfork(NULL, NULL, in_forked_child);
    }
}

void watchdog_stop(void)
{
    if (!wd.on || getpid() != wd.owner)
        return;
    watchdog_await_counts(); /* after hvd_shutdown without the handshake */
    ssize_t r = write(wd.wake[1], "x", 1);
    (void)r;
    pthread_join(wd.thread, NULL);
    wd.on = 0; /* the handlers send nothing from here */
    remove_signal_notes();
    note bye = watchdog_make_note(NOTE_BYE);
    for (int p = 0; p < wd.size; p++)
        if (p != wd.rank && !wd.left[p])
            watchdog_send_note(wd.fd[p], &bye);
    close(wd.wake[0]);
    close(wd.wake[1]);
    wd.wake[0] = wd.wake[1] = -1;
    free_all();
}

