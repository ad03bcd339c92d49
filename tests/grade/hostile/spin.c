/* Spins on the CPU (cap $HVDLAB_HOSTILE_SPIN_S seconds of CPU, default for ever). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(void)
{
    const char *c = getenv("HVDLAB_HOSTILE_SPIN_S");
    double cap = c ? atof(c) : 1e18;
    volatile unsigned long x = 0;
    while ((double)clock() / CLOCKS_PER_SEC < cap)
        for (int i = 0; i < 1000000; i++)
            x += (unsigned long)i;
    fprintf(stderr, "hostile: spun %.0f s of CPU\n", (double)clock() / CLOCKS_PER_SEC);
    return 0;
}
