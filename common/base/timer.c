/* timer.c — monotonic seconds. See timer.h.
 * Public: timer_seconds. */
#include "base/timer.h"

#include <time.h>

double timer_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
