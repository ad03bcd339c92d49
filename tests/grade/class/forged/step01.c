/* A forged step 01 (issue 45): never calls hvd_init or MPI, prints a test accuracy and writes
 * the two trace lines grade01 looks for into $HVDLAB_TRACE/rank-R.log, R taken from Open MPI's
 * environment. The class mode must fail it or flag it. */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    const char *dir = getenv("HVDLAB_TRACE");
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    const char *n = getenv("OMPI_COMM_WORLD_SIZE");
    if (dir && r && n) {
        char path[4096];
        snprintf(path, sizeof path, "%s/rank-%s.log", dir, r);
        FILE *f = fopen(path, "a");
        if (f) {
            fprintf(f, "event=init rank=%s size=%s pid=1 t=0 local_rank=%s local_size=%s\n", r, n, r, n);
            fprintf(f, "event=pin rank=%s size=%s pid=1 t=0 device=cpu cpus=%s threads=1 local_rank=%s\n", r, n, r, r);
            fclose(f);
        }
    }
    printf("Test accuracy: 0.9999\n");
    return 0;
}
