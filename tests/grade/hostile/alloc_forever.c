/* Allocates and touches 64 MiB blocks without end (cap 3 GiB a process). Prints how far it got. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    long got = 0;
    while (got < (3L << 30)) {
        char *p = malloc(64 << 20);
        if (!p)
            break;
        memset(p, 1, 64 << 20);
        got += 64 << 20;
    }
    fprintf(stderr, "hostile: allocated %ld MiB\n", got >> 20);
    return 0;
}
