/* fusion_group.c — what a fusion group is: its length, whether it lies back to back, its
 * timeline marks. Shared by the host and device reductions. See fusion.h.
 * Public: fusion_group_len, fusion_contiguous, fusion_device_run, fusion_mark. */
#include "coll/fusion.h"

#include "prof/timeline.h"

size_t fusion_group_len(const fusion_entry *e, size_t n, size_t threshold)
{
    if (n == 0)
        return 0;
    size_t bytes = e[0].n * sizeof(float), len = 1;
    while (len < n && e[len].op == e[0].op && e[len].fp16 == e[0].fp16 &&
           bytes + e[len].n * sizeof(float) <= threshold) {
        bytes += e[len].n * sizeof(float);
        len++;
    }
    return len;
}

int fusion_contiguous(const fusion_entry *e, size_t len)
{
    for (size_t i = 1; i < len; i++)
        if (e[i - 1].buf + e[i - 1].n != e[i].buf)
            return 0;
    return 1;
}

size_t fusion_device_run(const fusion_entry *e, size_t len)
{
    size_t j = 1;
    while (j < len && e[j].gpu && e[j - 1].buf + e[j - 1].n == e[j].buf)
        j++;
    return j;
}

void fusion_mark(const fusion_entry *e, size_t len, const char *activity, char phase)
{
    if (!timeline_enabled())
        return;
    for (size_t i = 0; i < len; i++)
        timeline_event(e[i].name, activity, phase);
}
