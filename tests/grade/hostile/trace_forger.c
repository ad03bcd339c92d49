/* A trace forger: never calls hvd_init or MPI, prints a good accuracy and writes made-up trace
 * lines for ranks 0 and 1 into $HVDLAB_TRACE. */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    const char *dir = getenv("HVDLAB_TRACE");
    for (int r = 0; dir && r < 2; r++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/rank-%d.log", dir, r);
        FILE *f = fopen(path, "a");
        if (!f)
            continue;
        fprintf(f, "event=init rank=%d size=2 local_rank=%d pid=%d\n", r, r, 100 + r);
        fprintf(f, "event=pin rank=%d device=%d\n", r, r);
        fclose(f);
    }
    printf("Test accuracy: 0.9999\n");
    return 0;
}
