/* prog_fault_ops.c — one allreduce whose reduce op differs between ranks (rank 0 SUM, the others
 * AVERAGE), for the fault table (tests/faults/run_faults.sh). Prints what rank 0 got and exits 0
 * when nothing stops it. */
#include <stdio.h>

#include "hvdlab.h"

int main(int argc, char **argv)
{
    hvd_init(&argc, &argv);
    float buf[4] = {1, 1, 1, 1};
    hvd_allreduce(buf, 4, hvd_rank() == 0 ? HVD_SUM : HVD_AVERAGE, "mixed_op");
    if (hvd_rank() == 0)
        printf("prog_fault_ops: rank 0 got %g\n", (double)buf[0]);
    hvd_shutdown();
    return 0;
}
