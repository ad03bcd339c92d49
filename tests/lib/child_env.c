/* child_env.c — a function run in a forked child with a variable set. See child_env.h.
 * Public: child_env_run. */
#include "lib/child_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/file_io.h"

int child_env_run(const char *name, const char *value, int (*body)(void *arg), void *arg,
                  char *err, size_t errlen)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    fflush(NULL); /* nothing buffered before the fork is written twice */
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        setenv(name, value, 1);
        _exit(body(arg));
    }
    close(fd[1]);
    fd_read_text(fd[0], err, errlen); /* closes fd[0] */
    int st = 0;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
