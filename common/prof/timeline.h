/* timeline.h — HVD_TIMELINE: a Chrome-trace JSON of every collective (chrome://tracing, Perfetto).
 *
 * As Horovod's: each tensor is a "process" (pid) named by a process_name metadata event, with
 * NEGOTIATE_ALLREDUCE then ALLREDUCE spans and nested MEMCPY_IN_FUSION_BUFFER, MPI_ALLREDUCE
 * (the ring; on one host SHM_ALLREDUCE or CMA_ALLREDUCE, allreduce.h), MEMCPY_OUT_FUSION_BUFFER;
 * ts in microseconds since the timeline opened. Rank 0 writes it.
 * The file is valid JSON after every event: each event and the closing bracket go out in one
 * write at the end of the file, so a killed job leaves a loadable trace. A write that fails (a
 * full disk) stops the trace with one warning naming the file; the file keeps the events before.
 */
#ifndef HVDLAB_TIMELINE_H
#define HVDLAB_TIMELINE_H

/* Returns 0, or -1 with a message naming the file in err. */
int timeline_open(const char *path, char *err, unsigned errlen);
void timeline_close(void);
int timeline_enabled(void);
/* phase: 'B' begin, 'E' end. A tensor seen for the first time gets its pid and name event. */
void timeline_event(const char *tensor, const char *activity, char phase);

#endif
