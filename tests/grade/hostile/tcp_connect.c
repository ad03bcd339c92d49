/* Connects to 127.0.0.1:$HVDLAB_HOSTILE_PORT (a port the test listens on outside the sandbox)
 * and sends a line. Prints whether the connection was made. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void)
{
    const char *p = getenv("HVDLAB_HOSTILE_PORT");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(p ? atoi(p) : 8080)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    int ok = s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) == 0;
    if (ok && write(s, "stolen\n", 7) != 7)
        ok = 0;
    fprintf(stderr, "hostile: connect %s\n", ok ? "made" : "refused");
    return 0;
}
