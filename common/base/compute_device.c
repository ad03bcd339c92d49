/* compute_device.c — the device models are built on. See compute_device.h.
 * Public: compute_device_set, compute_device_gpu. */
#include "base/compute_device.h"

static int gpu = -1;

void compute_device_set(int g) { gpu = g < 0 ? -1 : g; }
int compute_device_gpu(void) { return gpu; }
