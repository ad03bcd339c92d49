/* early_signal.h — a SIGUSR1 that comes while a rank starts up. ./hvdrun passes a Ctrl-C or a
 * SIGTERM on to the ranks as SIGUSR1 (train/stop.h saves the work at a step's end), but the
 * stop handlers are installed only when the training begins, a second or more after the ranks
 * start (MPI_Init, the data, the model). SIGUSR1's default action kills, so a signal sent in
 * that window killed the ranks mid-start-up ("exited on signal 10", sometimes a crash in mpirun's
 * own clean-up) instead of stopping them with a line.
 *
 *   hvd_init            early_signal_catch(): from before MPI_Init, a SIGUSR1 is only recorded
 *   args_parse          early_signal_keep(): this program stops at a step's end (train/stop.h)
 *   stop_install        early_signal_take(): the recorded signal counts as caught there
 *   each hvd_* call     early_signal_unkept(): a program that never said keep (a bench, a test
 *                       program) dies of the recorded signal there (early_signal_release), as
 *                       it would have at once
 *   hvd_shutdown        early_signal_unkeep(), then the same: a program that said keep but
 *                       never installed the handlers (args_parse without progress_init) dies of
 *                       a signal no one took there at the latest; SIGUSR1's default comes back
 *
 * Public: early_signal_catch, early_signal_keep, early_signal_unkeep, early_signal_take,
 *         early_signal_unkept, early_signal_release.
 */
#ifndef HVDLAB_EARLY_SIGNAL_H
#define HVDLAB_EARLY_SIGNAL_H

/* Records SIGUSR1 from now on, where its action is still the default (not where the program or a
 * library handles or ignores it). */
void early_signal_catch(void);
/* The program installs stop.h's handlers later: keep a recorded signal for them. */
void early_signal_keep(void);
/* No stop handlers will take a recorded signal any more (hvd_shutdown). */
void early_signal_unkeep(void);
/* The recorded signal (0: none), taken once, after stop.h has put its own handler in place. */
int early_signal_take(void);
/* A recorded signal that no one will take (early_signal_keep not called), else 0. The caller
 * notes it and calls early_signal_release, which ends the process. */
int early_signal_unkept(void);
/* SIGUSR1's default action back; a recorded signal is raised again, and the process ends as it
 * would have when it came. For a program that calls args_parse but installs no stop handlers
 * (bench/scaling.c), after args_parse. */
void early_signal_release(void);

#endif
