/* A disk filler: 1 MiB writes into files of at most 64 MiB each, in its folder and in /tmp,
 * until a write fails (cap 1 GiB in all). Prints the bytes written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long fill(const char *dir, long cap)
{
    static char buf[1 << 20];
    memset(buf, 'x', sizeof buf);
    long total = 0;
    for (int f = 0; total < cap; f++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/fill-%d", dir, f);
        FILE *fp = fopen(path, "w");
        if (!fp)
            break;
        int ok = 1;
        for (int k = 0; k < 64 && total < cap && ok; k++) {
            ok = fwrite(buf, 1, sizeof buf, fp) == sizeof buf && fflush(fp) == 0;
            total += ok ? (long)sizeof buf : 0;
        }
        if (fclose(fp) != 0 || !ok)
            break;
    }
    return total;
}

int main(void)
{
    const char *t = getenv("TMPDIR");
    long a = fill(".", 1L << 29);
    long b = fill(t ? t : "/tmp", 1L << 29);
    fprintf(stderr, "hostile: wrote %ld MiB here and %ld MiB in tmp\n", a >> 20, b >> 20);
    return 0;
}
