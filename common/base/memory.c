/* memory.c — huge-page backed, pre-faulted buffers. See memory.h.
 * Public: memory_alloc, memory_free. */
#include "base/memory.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)

void *memory_alloc(size_t bytes)
{
    size_t len = bytes ? (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE : HUGE_PAGE;
    void *p = NULL;
    if (posix_memalign(&p, HUGE_PAGE, len) != 0)
        return NULL;
    madvise(p, len, MADV_HUGEPAGE); /* advice only: without THP the buffer still works */
    memset(p, 0, len);              /* fault every page in now, not during a collective */
    return p;
}

void memory_free(void *p) { free(p); }
