/* child_env.h — a function run in a forked child with one environment variable set: what a
 * value does to a process (a bad one stops it with one line) without stopping the test.
 *
 * Public: child_env_run.
 */
#ifndef HVDLAB_CHILD_ENV_H
#define HVDLAB_CHILD_ENV_H

#include <stddef.h>

/* Forks; the child sends its stderr into a pipe, sets name=value and exits with body(arg) (a
 * body that stops the process exits as that does). Returns the child's exit status, 128 + the
 * signal that ended it, or -1 when it could not be started; its stderr in err, cut to errlen. */
int child_env_run(const char *name, const char *value, int (*body)(void *arg), void *arg,
                  char *err, size_t errlen);

#endif
