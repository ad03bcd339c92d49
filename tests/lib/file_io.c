/* file_io.c — whole files into memory. See file_io.h.
 * Public: file_read, file_lines, fd_read_text. */
#include "lib/file_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *file_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    long sz = -1;
    if (fseek(f, 0, SEEK_END) == 0 && (sz = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0)
        buf = malloc((size_t)sz + 1);
    if (buf && fread(buf, 1, (size_t)sz, f) != (size_t)sz) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (!buf)
        return NULL;
    buf[sz] = '\0';
    if (len)
        *len = (size_t)sz;
    return buf;
}

size_t file_lines(char *text, char ***lines)
{
    size_t n = 0;
    for (const char *s = text; *s; n++) {
        const char *eol = strchr(s, '\n');
        s = eol ? eol + 1 : s + strlen(s);
    }
    *lines = malloc((n ? n : 1) * sizeof **lines);
    char *s = text;
    for (size_t i = 0; i < n; i++) {
        (*lines)[i] = s;
        char *eol = strchr(s, '\n');
        if (!eol)
            break;
        *eol = '\0';
        s = eol + 1;
    }
    return n;
}

size_t fd_read_text(int fd, char *out, size_t outlen)
{
    size_t n = 0;
    ssize_t r;
    while (n + 1 < outlen && (r = read(fd, out + n, outlen - 1 - n)) > 0)
        n += (size_t)r;
    if (outlen)
        out[n] = '\0';
    close(fd);
    return n;
}
