/* prog_lab_data.c — the start of a lab program: flags, the data, the training loader (which
 * checks that the ranks agree on the epoch). For tests/unit/test_lab_agree.c:
 *
 *   mpirun -n 1 prog_lab_data --data-dir A : -n 1 prog_lab_data --data-dir B
 *
 * prints "prog_lab_data: agreed" on rank 0 when the ranks go on. */
#include <stdio.h>

#include "hvdlab.h"

int main(int argc, char **argv)
{
    hvd_init(&argc, &argv);
    char err[ERRMSG_LEN];
    args a;
    if (args_parse(&a, argc, argv, err, sizeof err) != 0)
        fatal_error("%s", err);
    dataset ds;
    if (dataset_load(a.data_dir, &ds, err, sizeof err) != 0)
        fatal_error("%s", err);
    loader train = lab_train_loader(&a, &ds, (lab_shard){hvd_rank(), hvd_size()});
    if (hvd_rank() == 0)
        printf("prog_lab_data: agreed\n");
    loader_free(&train);
    dataset_free(&ds);
    hvd_shutdown();
    return 0;
}
