/* ck_mpi.h — run a Check suite on every MPI rank so that ranks agree.
 *
 * Tests that call collectives must not ck_assert halfway (a rank that leaves a test early while
 * the others enter a collective hangs the job). They record failures with CK_EXPECT, which
 * keeps going, and finish with CK_AGREE(), which sums the failures over all ranks and fails the
 * test on every rank if any rank saw one. Serial tests may use plain ck_assert.
 *
 * ck_mpi_main() runs the suite with CK_NOFORK, prints Check's summary on rank 0 (and on any rank
 * that failed), and returns the exit status agreed by all ranks.
 */
#ifndef HVDLAB_CK_MPI_H
#define HVDLAB_CK_MPI_H

#include <check.h>
#include <stdio.h>

extern int ck_local_failures;
extern char ck_first_failure[256];

#define CK_EXPECT(cond, ...)                                                               \
    do {                                                                                   \
        if (!(cond))                                                                       \
            ck_mpi_record(__VA_ARGS__);                                                    \
    } while (0)
/* Counts a failure; the first one's message is kept (long messages are cut, on purpose). */
void ck_mpi_record(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Fails the current test on every rank when any rank recorded a failure. */
#define CK_AGREE() ck_mpi_agree(__FILE__, __LINE__)
void ck_mpi_agree(const char *file, int line);

/* Runs suite on every rank; with_mpi = 0 runs without hvd_init (serial tests). */
int ck_mpi_main(int argc, char **argv, Suite *suite, int with_mpi);

#endif
