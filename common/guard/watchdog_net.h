/* watchdog_net.h — the watchdog's socket plumbing (watchdog.h): rank 0 listens on an ephemeral
 * TCP port and names its IPv4 addresses; the others connect with a bounded wait; whole messages
 * go both ways across EINTR (a profiler's timer). Nothing here knows about ranks or notes.
 * Public: watchdog_net_listen, watchdog_net_addresses, watchdog_net_connect, watchdog_net_recv,
 *         watchdog_net_send. */
#ifndef HVDLAB_WATCHDOG_NET_H
#define HVDLAB_WATCHDOG_NET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define WATCHDOG_NET_MAX_ADDRS 8

/* A listening socket on every interface and an ephemeral port (*port), else -1. */
int watchdog_net_listen(int *port);
/* This host's IPv4 addresses, network order, the others' first and loopback last; returns how
 * many (at least 1, at most max). */
int watchdog_net_addresses(uint32_t *addr, int max);
/* A connected, blocking socket to addr:port (network order) within wait_ms, else -1. */
int watchdog_net_connect(uint32_t addr, int port, int wait_ms);
/* len bytes, retried across EINTR and short reads: len, else what came before EOF (0) or the
 * error (-1). */
ssize_t watchdog_net_recv(int fd, void *buf, size_t len);
/* len bytes (MSG_NOSIGNAL), retried across EINTR; async-signal-safe. Returns as recv does. */
ssize_t watchdog_net_send(int fd, const void *buf, size_t len);

#endif
