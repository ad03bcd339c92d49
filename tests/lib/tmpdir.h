/* tmpdir.h — scratch directories for tests that write files.
 *
 * tmp_suite_setup/teardown make and remove a base directory per test binary; use them as Check's
 * unchecked fixture (run by the parent process, so the directory goes away even when a failing
 * test's forked process skips its own teardown). tmp_test_setup/teardown make and remove one
 * fresh directory per test inside it (a checked fixture). */
#ifndef HVDLAB_TMPDIR_H
#define HVDLAB_TMPDIR_H

extern char tmp_dir[128]; /* this test's directory */

void tmp_suite_setup(void);
void tmp_suite_teardown(void);
void tmp_test_setup(void);
void tmp_test_teardown(void);
/* tmp_dir/name, in one of 8 rotating buffers (so a few can be alive at once). */
const char *tmp_path(const char *name);

#endif
