/* A flood of output on stdout until a write fails (cap 256 MiB). Prints the bytes written. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
    signal(SIGXFSZ, SIG_IGN); /* see the failed write rather than die of the signal */
    static char buf[1 << 16];
    memset(buf, 'y', sizeof buf);
    long total = 0;
    while (total < (256L << 20)) {
        ssize_t k = write(1, buf, sizeof buf);
        if (k <= 0)
            break;
        total += k;
    }
    fprintf(stderr, "hostile: flood %ld MiB\n", total >> 20);
    return 0;
}
