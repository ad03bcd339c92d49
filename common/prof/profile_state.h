/* profile_state.h — the counts profile.c keeps, shared with the MPI wrappers and the report
 * (inside prof/ only; the API is profile.h). */
#ifndef HVDLAB_PROFILE_STATE_H
#define HVDLAB_PROFILE_STATE_H

#include "prof/profile.h"

typedef struct {
    int on;
    double t0;           /* timer_seconds() at hvd_init or the last profile_reset */
    profile_count c[PROFILE_NOPS];
    char timeline[1024]; /* rank 0's timeline path, "" if none */
} profile_state;

extern profile_state profile_S;

#endif
