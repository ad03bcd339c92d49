/* A daemon: a child leaves the session (setsid), the parent exits; the child lives 60 s (long
 * enough to tamper with the next student's run) and then ends. */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
    pid_t p = fork();
    if (p == 0) {
        setsid();
        if (fork() == 0) {
            sleep(60);
            _exit(0);
        }
        _exit(0);
    }
    fprintf(stderr, "hostile: daemon started\n");
    printf("Test accuracy: 0.9500\n");
    return 0;
}
