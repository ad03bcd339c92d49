/* watchdog_net.c — listen, addresses and a connect with a bounded wait (watchdog_net.h).
 * Public: watchdog_net_listen, watchdog_net_addresses, watchdog_net_connect, watchdog_net_recv,
 *         watchdog_net_send. */
#include "guard/watchdog_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

int watchdog_net_listen(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 128) ||
        getsockname(fd, (struct sockaddr *)&a, &len)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

int watchdog_net_addresses(uint32_t *addr, int max)
{
    struct ifaddrs *ifs = NULL;
    int n = 0;
    if (getifaddrs(&ifs) == 0) {
        for (struct ifaddrs *i = ifs; i && n < max - 1; i = i->ifa_next)
            if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET) {
                uint32_t v = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
                if ((ntohl(v) >> 24) != 127)
                    addr[n++] = v;
            }
        freeifaddrs(ifs);
    }
    addr[n++] = htonl(INADDR_LOOPBACK); /* last: the same host only */
    return n;
}

int watchdog_net_connect(uint32_t addr, int port, int wait_ms)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = addr;
    int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
    if (rc != 0 && (errno == EINPROGRESS || errno == EINTR)) { /* EINTR: it goes on, as this */
        struct pollfd p = {fd, POLLOUT, 0};
        double end = now_ms() + wait_ms;
        int ready;
        do /* a signal (a profiler's timer) must not end the wait early */
            ready = poll(&p, 1, (int)(end - now_ms()) > 0 ? (int)(end - now_ms()) : 0);
        while (ready < 0 && errno == EINTR);
        int err = 0;
        socklen_t len = sizeof err;
        rc = ready == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0
                 ? 0 : -1;
    }
    if (rc != 0) {
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

ssize_t watchdog_net_recv(int fd, void *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t r = recv(fd, (char *)buf + got, len - got, MSG_WAITALL);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return got ? (ssize_t)got : r;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

ssize_t watchdog_net_send(int fd, const void *buf, size_t len)
{
    size_t sent = 0;
    while (sent < len) {
        ssize_t r = send(fd, (const char *)buf + sent, len - sent, MSG_NOSIGNAL);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return sent ? (ssize_t)sent : r;
        sent += (size_t)r;
    }
    return (ssize_t)sent;
}
