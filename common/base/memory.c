/* memory.c — huge-page backed, pre-faulted buffers. See memory.h.
 * Public: memory_alloc, memory_available, memory_free, memory_huge_pages, memory_on_huge_pages. */
#include "base/memory.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define HUGE_PAGE ((size_t)2 << 20)

/* The live buffers on huge pages, for memory_on_huge_pages: a few dozen in the kit (the model's
 * flat buffers, the fusion buffer, the ring's scratch), but every one must be listed: the ranks
 * choose the allreduce's path by it and must all choose alike (coll/allreduce.c). */
static struct range {
    uintptr_t begin, end;
} *live;
static int nlive, cap;
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static int thp = -1; /* the kernel backs MADV_HUGEPAGE regions with huge pages: 1, 0 */

/* "always" or "madvise" selected in /sys/kernel/mm/transparent_hugepage/enabled. */
static int thp_enabled(void)
{
    char line[128] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f)
        return 0;
    if (!fgets(line, sizeof line, f))
        line[0] = '\0';
    fclose(f);
    return strstr(line, "[always]") != NULL || strstr(line, "[madvise]") != NULL;
}

/* The first number in a file (a cgroup's memory.max holds "max" when unlimited: 0 then). */
static unsigned long long read_number(const char *path)
{
    unsigned long long v = 0;
    FILE *f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%llu", &v) != 1)
            v = 0;
        fclose(f);
    }
    return v;
}

size_t memory_available(void)
{
    unsigned long long avail = 0, kb;
    char line[256];
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
                avail = kb * 1024;
                break;
            }
        fclose(f);
    }
    /* this process's cgroup, as a container or a batch job's limit sets it: v2 ("0::/path",
     * memory.max) or v1 ("N:memory:/path", memory.limit_in_bytes); a path the mount does not
     * show (a container's own view) is read at the mount's root */
    f = fopen("/proc/self/cgroup", "r");
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        const char *v1 = strstr(line, ":memory:");
        const char *rel = !strncmp(line, "0::", 3) ? line + 3 : v1 ? v1 + 8 : NULL;
        if (!rel)
            continue;
        const char *root = v1 ? "/sys/fs/cgroup/memory" : "/sys/fs/cgroup";
        const char *lim = v1 ? "memory.limit_in_bytes" : "memory.max";
        const char *use = v1 ? "memory.usage_in_bytes" : "memory.current";
        char p[700], q[700];
        snprintf(p, sizeof p, "%s%s/%s", root, rel, lim);
        if (access(p, R_OK) != 0)
            rel = "";
        snprintf(p, sizeof p, "%s%s/%s", root, rel, lim);
        snprintf(q, sizeof q, "%s%s/%s", root, rel, use);
        unsigned long long max = read_number(p), cur = read_number(q);
        if (max) {
            unsigned long long left = max > cur ? max - cur : 0;
            if (!avail || left < avail)
                avail = left;
        }
    }
    if (f)
        fclose(f);
    return (size_t)avail;
}

void *memory_alloc(size_t bytes)
{
    size_t len = bytes ? (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE : HUGE_PAGE;
    size_t avail = len > ((size_t)64 << 20) ? memory_available() : 0; /* small ones: no look */
    if (avail && len > avail) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = NULL;
    if (posix_memalign(&p, HUGE_PAGE, len) != 0)
        return NULL;
    /* advice only: without THP the buffer still works */
    int advised = madvise(p, len, MADV_HUGEPAGE) == 0;
    memset(p, 0, len); /* fault every page in now, not during a collective */
    pthread_mutex_lock(&live_lock);
    if (thp < 0)
        thp = thp_enabled();
    int list = advised && thp, ok = 1;
    if (list && nlive == cap) {
        int more = cap ? 2 * cap : 64;
        struct range *r = realloc(live, (size_t)more * sizeof *r);
        if (r)
            live = r, cap = more;
        ok = r != NULL;
    }
    if (list && ok)
        live[nlive++] = (struct range){(uintptr_t)p, (uintptr_t)p + len};
    pthread_mutex_unlock(&live_lock);
    if (!ok) { /* no room to list it: out of memory, as for the buffer itself */
        free(p);
        return NULL;
    }
    return p;
}

int memory_huge_pages(void)
{
    pthread_mutex_lock(&live_lock);
    if (thp < 0)
        thp = thp_enabled();
    int on = thp;
    pthread_mutex_unlock(&live_lock);
    return on;
}

void memory_free(void *p)
{
    pthread_mutex_lock(&live_lock);
    for (int i = 0; i < nlive; i++)
        if (live[i].begin == (uintptr_t)p) {
            live[i] = live[--nlive];
            break;
        }
    pthread_mutex_unlock(&live_lock);
    free(p);
}

int memory_on_huge_pages(const void *p, size_t bytes)
{
    uintptr_t b = (uintptr_t)p, e = b + bytes;
    int found = 0;
    pthread_mutex_lock(&live_lock);
    for (int i = 0; i < nlive && !found; i++)
        found = live[i].begin <= b && e <= live[i].end;
    pthread_mutex_unlock(&live_lock);
    return found;
}
