/* early_signal.c — a SIGUSR1 during start-up is kept for the stop handlers. See early_signal.h.
 * Public: early_signal_catch, early_signal_keep, early_signal_unkeep, early_signal_take,
 *         early_signal_unkept, early_signal_release. */
#include "base/early_signal.h"

#include <signal.h>
#include <stdatomic.h>
#include <string.h>

static atomic_int recorded; /* the signal's number, 0 before it comes */
static atomic_int kept, catching;

static void record(int sig) { atomic_store(&recorded, sig); }

void early_signal_catch(void)
{
    struct sigaction old;
    if (sigaction(SIGUSR1, NULL, &old) != 0 || old.sa_handler != SIG_DFL)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = record;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; /* start-up goes on: MPI_Init and file reads are not interrupted */
    if (sigaction(SIGUSR1, &sa, NULL) == 0)
        atomic_store(&catching, 1);
}

void early_signal_keep(void) { atomic_store(&kept, 1); }

void early_signal_unkeep(void) { atomic_store(&kept, 0); }

int early_signal_take(void)
{
    atomic_store(&catching, 0); /* stop.h's handler has replaced record() */
    return atomic_exchange(&recorded, 0);
}

int early_signal_unkept(void)
{
    return atomic_load(&catching) && !atomic_load(&kept) ? atomic_load(&recorded) : 0;
}

void early_signal_release(void)
{
    if (!atomic_exchange(&catching, 0))
        return;
    signal(SIGUSR1, SIG_DFL);
    int sig = atomic_exchange(&recorded, 0);
    if (sig)
        raise(sig);
}
