/* agree.c — compare settings across ranks. See agree.h.
 * Public: agree_settings. */
#include "guard/agree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fatal.h"

void agree_settings(MPI_Comm comm, const agree_setting *mine, int n)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int bytes = n * (int)sizeof *mine;
    agree_setting *all = malloc((size_t)size * (size_t)bytes);
    if (!all)
        fatal_error("settings: out of memory comparing %d settings over %d ranks", n, size);
    MPI_Allgather(mine, bytes, MPI_BYTE, all, bytes, MPI_BYTE, comm);
    /* Every rank has the same table, so every rank decides alike and none is left waiting. */
    for (int r = 1; r < size; r++)
        for (int i = 0; i < n; i++) {
            const agree_setting *a = &all[i], *b = &all[(size_t)r * (size_t)n + (size_t)i];
            if (strcmp(a->value, b->value) == 0)
                continue;
            if (rank == 0) {
                /* only rank 0 speaks, and says so as fatal_error's lines do */
                fprintf(stderr, "hvdlab: error: [rank 0] setting mismatch: %s=%s on rank 0 but "
                        "%s=%s on rank %d (every rank must have the same %s; mpirun -x %s passes "
                        "it to all)\n", a->name, a->value, b->name, b->value, r, a->name, a->name);
                fflush(stderr);
            }
            free(all);
            MPI_Barrier(comm); /* the line is out before anyone exits */
            MPI_Finalize();
            exit(EXIT_FAILURE);
        }
    free(all);
}
