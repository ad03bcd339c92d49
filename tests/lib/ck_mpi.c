/* ck_mpi.c — Check suites run on every MPI rank with one agreed verdict. See ck_mpi.h.
 * Public: ck_mpi_record, ck_mpi_agree, ck_mpi_main. */
#include "lib/ck_mpi.h"

#include <mpi.h>
#include <stdarg.h>
#include <stdlib.h>

#include "hvd/hvd.h"

int ck_local_failures = 0;
char ck_first_failure[256];

void ck_mpi_record(const char *fmt, ...)
{
    if (ck_local_failures++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ck_first_failure, sizeof ck_first_failure, fmt, ap);
        va_end(ap);
    }
}

static int mpi_running(void)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    return init && !fin;
}

void ck_mpi_agree(const char *file, int line)
{
    int local = ck_local_failures, total = local;
    /* Plain MPI on purpose: the verdict must not depend on the collectives under test. */
    if (mpi_running())
        MPI_Allreduce(&local, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    char first[sizeof ck_first_failure];
    snprintf(first, sizeof first, "%s", local ? ck_first_failure : "none here, see the other ranks");
    ck_local_failures = 0;
    ck_first_failure[0] = '\0';
    ck_assert_msg(total == 0, "%s:%d: %d failed expectation(s) over all ranks; first on rank %d: %s",
                  file, line, total, hvd_rank(), first);
}

int ck_mpi_main(int argc, char **argv, Suite *suite, int with_mpi)
{
    if (with_mpi)
        hvd_init(&argc, &argv);
    SRunner *sr = srunner_create(suite);
    if (with_mpi)
        srunner_set_fork_status(sr, CK_NOFORK); /* one process per rank, all in step */
    srunner_run_all(sr, CK_SILENT);
    int failed = srunner_ntests_failed(sr), total = failed;
    if (with_mpi && mpi_running())
        MPI_Allreduce(&failed, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (hvd_rank() == 0 || failed) {
        if (hvd_size() > 1)
            printf("[rank %d of %d] ", hvd_rank(), hvd_size());
        fflush(stdout);
        srunner_print(sr, CK_NORMAL);
    }
    srunner_free(sr);
    if (with_mpi)
        hvd_shutdown();
    return total == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
