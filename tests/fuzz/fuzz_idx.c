/* fuzz_idx.c — libFuzzer target for the IDX parser (build and run: `make fuzz-idx`).
 *
 * Each input goes through three readers and they must agree:
 *   1. idx_parse_buffer on the bytes;
 *   2. idx_read_file on a file holding the bytes (gzip content is inflated through zlib);
 *   3. idx_read_file on the same file under a ".gz" name (non-gzip content must be refused).
 * Besides memory errors (ASan) and undefined behaviour (UBSan), it traps when a success breaks
 * the format's invariants, when plain-file and memory parsing disagree, or when an error message
 * is empty, unnamed or spans lines.
 * Public: LLVMFuzzerTestOneInput.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/idx.h"

static char dir[64], plain[96], gzname[96];

static void cleanup(void)
{
    unlink(gzname);
    unlink(plain);
    rmdir(dir);
}

static void init(void)
{
    /* tmpfs if there is one: on a disk, rewriting a file every run makes it I/O bound */
    struct stat st;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
    snprintf(dir, sizeof dir, "%s/hvdlab-fuzz-XXXXXX", tmp);
    if (!mkdtemp(dir))
        abort();
    snprintf(plain, sizeof plain, "%s/input", dir);
    snprintf(gzname, sizeof gzname, "%s/input.gz", dir);
    if (symlink("input", gzname) != 0)
        abort();
    atexit(cleanup);
}

static void check_ok(const idx_array *a)
{
    if (a->ndims != 1 && a->ndims != 3)
        __builtin_trap();
    if (a->magic != (a->ndims == 1 ? IDX_MAGIC_LABELS : IDX_MAGIC_IMAGES))
        __builtin_trap();
    if (a->count != a->dims[0] || a->count * a->item_bytes != a->nbytes || !a->data)
        __builtin_trap();
}

static void check_err(const char *err, const char *name)
{
    if (strncmp(err, name, strlen(name)) != 0 || strlen(err) <= strlen(name) + 2)
        __builtin_trap();
    if (strchr(err, '\n'))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0])
        init();
    char err[ERRMSG_LEN];
    idx_array m, f, g;
    int rm = idx_parse_buffer(data, size, "mem", &m, err, sizeof err);
    if (rm == 0) {
        check_ok(&m);
        if (size != 4 + 4 * (size_t)m.ndims + m.nbytes ||
            (m.nbytes && memcmp(m.data, data + size - m.nbytes, m.nbytes) != 0))
            __builtin_trap();
    } else {
        check_err(err, "mem");
    }

    /* rewrite in place (no O_TRUNC: ext4 flushes files truncated to zero on close) */
    int fd = open(plain, O_WRONLY | O_CREAT, 0600);
    if (fd < 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size) ||
        ftruncate(fd, (off_t)size) != 0 || close(fd) != 0)
        abort();
    int is_gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
    int rf = idx_read_file(plain, &f, err, sizeof err);
    if (rf == 0)
        check_ok(&f);
    else
        check_err(err, plain);
    if (!is_gzip) { /* transparent read of a plain file == the memory parser */
        if (rf != rm)
            __builtin_trap();
        if (rf == 0 && (f.nbytes != m.nbytes || memcmp(f.dims, m.dims, sizeof f.dims) != 0 ||
                        (f.nbytes && memcmp(f.data, m.data, f.nbytes) != 0)))
            __builtin_trap();
    }

    int rg = idx_read_file(gzname, &g, err, sizeof err);
    if (rg == 0)
        check_ok(&g);
    else
        check_err(err, gzname);
    if (is_gzip ? rg != rf : (rg == 0 || (size > 0 && !strstr(err, "not gzip"))))
        __builtin_trap();
    if (rg == 0 && (g.nbytes != f.nbytes || (g.nbytes && memcmp(g.data, f.data, g.nbytes) != 0)))
        __builtin_trap();
    idx_free(&m);
    idx_free(&f);
    idx_free(&g);
    return 0;
}
