/* tmpdir.c — scratch directories for tests. See tmpdir.h.
 * Public: tmp_suite_setup, tmp_suite_teardown, tmp_test_setup, tmp_test_teardown, tmp_path. */
#include "lib/tmpdir.h"

#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

char tmp_dir[128];
static char base[64];

static int remove_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st, (void)flag, (void)f;
    return remove(p);
}

static void remove_tree(const char *dir) { nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS); }

void tmp_suite_setup(void)
{
    snprintf(base, sizeof base, "/tmp/hvdlab-test-XXXXXX");
    if (!mkdtemp(base))
        abort();
}

void tmp_suite_teardown(void) { remove_tree(base); }

void tmp_test_setup(void)
{
    snprintf(tmp_dir, sizeof tmp_dir, "%s/tXXXXXX", base);
    ck_assert_ptr_nonnull(mkdtemp(tmp_dir));
}

void tmp_test_teardown(void)
{
    if (tmp_dir[0])
        remove_tree(tmp_dir);
    tmp_dir[0] = '\0';
}

const char *tmp_path(const char *name)
{
    static char buf[8][512];
    static int k;
    char *p = buf[k++ & 7];
    snprintf(p, sizeof buf[0], "%s/%s", tmp_dir, name);
    return p;
}
