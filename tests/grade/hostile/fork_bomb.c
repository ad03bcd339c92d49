/* A fork bomb (capped at 600 children a process, so a breach stays bounded): forks until fork
 * fails, the children sleep 5 s. Prints how many forks succeeded. */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

int main(void)
{
    int n = 0;
    while (n < 600) {
        pid_t p = fork();
        if (p < 0)
            break;
        if (p == 0) {
            sleep(5);
            _exit(0);
        }
        n++;
    }
    fprintf(stderr, "hostile: forks %d\n", n);
    printf("Test accuracy: 0.9500\n");
    return 0;
}
