/* gpu_skip.h — when a GPU test suite runs, skips, or fails before it starts.
 *
 * One rule for every CUDA suite: skip (exit 77, counted as skipped by tests/run_unit.sh, never as
 * passed) only when there truly is no GPU to use — a CPU build, no device found, or no driver on a
 * machine with no NVIDIA device node; fail when a GPU is there but CUDA cannot use it (e.g. a driver
 * too old for this runtime), so a GPU machine never turns a broken set-up into a green run. */
#ifndef HVDLAB_TESTS_GPU_SKIP_H
#define HVDLAB_TESTS_GPU_SKIP_H

/* 0 when the suite can run (*ngpu: the GPUs CUDA sees; ngpu may be NULL). Otherwise it has
 * printed one line — "skipped: no GPU (reason)" or "FAILED: a GPU is present but CUDA cannot use
 * it (reason)" — and returns the exit status to end with: 77 or 1. */
int gpu_skip_status(int *ngpu);

#endif
