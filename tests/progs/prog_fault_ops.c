/* prog_fault_ops.c — collectives for the fault table (tests/faults/run_faults.sh).
 *   prog_fault_ops        one allreduce whose reduce op differs between ranks (rank 0 SUM, the
 *                         others AVERAGE); prints what rank 0 got, exits 0 when nothing stops it.
 *   prog_fault_ops loop   broadcasts of 64 MiB, one after the other, for up to 60 s, after the
 *                         line "prog_fault_ops: looping": nearly all its time is inside a
 *                         collective that every rank has entered (for a SIGSTOP there). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timer.h"
#include "hvdlab.h"

int main(int argc, char **argv)
{
    hvd_init(&argc, &argv);
    if (argc > 1 && strcmp(argv[1], "loop") == 0) {
        size_t n = (size_t)1 << 24;
        float *buf = calloc(n, sizeof *buf);
        if (!buf)
            fatal_error("prog_fault_ops: out of memory");
        if (hvd_rank() == 0)
            printf("prog_fault_ops: looping\n");
        fflush(stdout);
        double t0 = timer_seconds();
        while (timer_seconds() - t0 < 60)
            hvd_broadcast(buf, n, 0, "loop");
        free(buf);
        hvd_shutdown();
        return 0;
    }
    float buf[4] = {1, 1, 1, 1};
    hvd_allreduce(buf, 4, hvd_rank() == 0 ? HVD_SUM : HVD_AVERAGE, "mixed_op");
    if (hvd_rank() == 0)
        printf("prog_fault_ops: rank 0 got %g\n", (double)buf[0]);
    hvd_shutdown();
    return 0;
}
