/* test_cma_denied.c — the single-copy allreduce (coll/cma.h) where the kernel forbids the
 * cross-process copies, under mpirun -n 1..4: every rank makes itself non-dumpable and gives up
 * CAP_SYS_PTRACE (as root it would otherwise be allowed anyway), so that process_vm_readv between
 * the ranks fails with EPERM, as it does under Yama ptrace_scope 2. The path forced onto the
 * single copy must then run the shared window on every rank, give the exact sums, and rank 0 must
 * say so once, in one line, however many calls follow. */
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/memory.h"
#include "coll/allreduce.h"
#include "hvd/hvd.h"
#include "lib/ck_mpi.h"
#include "lib/file_io.h"

/* Non-dumpable, and CAP_SYS_PTRACE out of the effective set: no peer may read this process. */
static int forbid_reads(void)
{
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
        return -1;
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    if (syscall(SYS_capget, &h, d) != 0)
        return -1;
    d[0].effective &= ~(1u << CAP_SYS_PTRACE);
    return (int)syscall(SYS_capset, &h, d);
}

START_TEST(forbidden_copies_fall_back_to_the_window)
{
    int rank = hvd_rank(), size = hvd_size();
    CK_EXPECT(forbid_reads() == 0, "rank %d: cannot drop the right to read peers", rank);
    char log[] = "/tmp/hvdlab-cma-denied-XXXXXX";
    int fd = rank == 0 ? mkstemp(log) : -1, saved = rank == 0 ? dup(2) : -1;
    if (rank == 0) { /* rank 0's stderr to a file for the calls below */
        ck_assert_int_ge(fd, 0);
        dup2(fd, 2);
    }
    allreduce_reconfigure(0, 0); /* a new window: the next call probes again */
    allreduce_force_path(ALLREDUCE_CMA);
    size_t n = (size_t)1 << 18; /* 1 MiB on huge pages: the single copy's own case */
    float *b = memory_alloc(n * sizeof *b);
    size_t bad = 0;
    for (int call = 0; call < 3; call++) {
        for (size_t i = 0; i < n; i++)
            b[i] = (float)(i % 1009) * 0.5f + (float)(rank * 3 + call);
        hvd_allreduce(b, n, HVD_SUM, "grad");
        for (size_t i = 0; i < n; i++)
            bad += b[i] != (float)(i % 1009) * 0.5f * (float)size +
                               (float)(3 * size * (size - 1) / 2 + call * size);
    }
    CK_EXPECT(bad == 0, "rank %d: %zu wrong sums", rank, bad);
    memory_free(b);
    allreduce_force_path(ALLREDUCE_AUTO);
    if (rank == 0) {
        fflush(stderr);
        dup2(saved, 2);
        close(saved);
        close(fd);
        size_t len = 0;
        char *text = file_read(log, &len);
        ck_assert_ptr_nonnull(text);
        size_t lines = 0, said = 0;
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
            lines++;
            said += strstr(line, "single-copy allreduce off") &&
                    strstr(line, "Operation not permitted");
        }
        /* one rank: no peer to read, nothing to say */
        CK_EXPECT(size == 1 ? lines == 0 : lines == 1 && said == 1,
                  "rank 0's stderr over 3 calls: %zu lines, %zu saying the copies are off "
                  "(EPERM): \"%s\"", lines, said, len ? text : "");
        free(text);
        unlink(log);
    }
    CK_AGREE();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cma_denied");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, forbidden_copies_fall_back_to_the_window);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    /* Open MPI's shared-memory transport makes the same copies for its large messages (the
     * stall inspector's are 4 KiB and more): off for this program, whose ranks forbid them */
    setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
    return ck_mpi_main(argc, argv, suite(), 1);
}
