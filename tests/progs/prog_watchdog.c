/* prog_watchdog.c — the dead-rank watchdog's corner cases (tests/watchdog/run.sh). Run under
 * mpirun with 2+ ranks; rank 1 dies, the others wait in an allreduce for the watchdog's line.
 *   prog_watchdog fork-kill   rank 1 forks a child that sleeps 10 s, then dies by SIGKILL: the
 *                             child must not keep rank 1's socket open (rank 0 names it at once)
 *   prog_watchdog fork-crash  rank 1's forked child dies by SIGSEGV, then rank 1 by SIGKILL: the
 *                             child's crash is not rank 1's note ("vanished", not "SIGSEGV")
 *   prog_watchdog eintr       a 0.1 ms interval timer (SIGALRM, a profiler's kind) interrupts
 *                             the main thread of every rank through hvd_init and after: the
 *                             watchdog still starts, then rank 1 dies by SIGKILL and is named
 *   prog_watchdog hup|term    rank 1 dies by SIGHUP or SIGTERM, signals whose default ends a
 *                             process (no handler of the program's): named "killed by SIGHUP" */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hvdlab.h"

static volatile sig_atomic_t ticks;
static void on_tick(int sig) { (void)sig; ticks++; }

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "eintr") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_tick; /* no SA_RESTART: the calls it lands in see EINTR */
        sigaction(SIGALRM, &sa, NULL);
        struct sigevent ev; /* at the main thread: the other threads would take most ticks */
        memset(&ev, 0, sizeof ev);
        ev.sigev_notify = SIGEV_THREAD_ID;
        ev.sigev_signo = SIGALRM;
        ev._sigev_un._tid = gettid();
        timer_t t;
        struct itimerspec it = {{0, 100000}, {0, 100000}};
        if (timer_create(CLOCK_MONOTONIC, &ev, &t) == 0)
            timer_settime(t, 0, &it, NULL);
    }
    hvd_init(&argc, &argv);
    float x = 1;
    hvd_allreduce(&x, 1, HVD_SUM, "before");
    if (hvd_rank() == 1) {
        if (strcmp(mode, "fork-kill") == 0 || strcmp(mode, "fork-crash") == 0) {
            pid_t child = fork();
            if (child == 0) {
                if (strcmp(mode, "fork-crash") == 0)
                    raise(SIGSEGV);
                sleep(10);
                _exit(0);
            }
            if (strcmp(mode, "fork-crash") == 0)
                waitpid(child, NULL, 0);
        }
        usleep(200000);
        raise(strcmp(mode, "hup") == 0 ? SIGHUP : strcmp(mode, "term") == 0 ? SIGTERM : SIGKILL);
    }
    hvd_allreduce(&x, 1, HVD_SUM, "after"); /* never ends: rank 1 is gone */
    printf("prog_watchdog: the allreduce ended\n");
    hvd_shutdown();
    return 0;
}
