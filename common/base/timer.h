/* timer.h — the kit's one clock: seconds on the monotonic clock (never jumps with the wall
 * clock), for durations only; differences are what mean something. */
#ifndef HVDLAB_TIMER_H
#define HVDLAB_TIMER_H

double timer_seconds(void);

#endif
