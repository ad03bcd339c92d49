/* compute_device.c — the device models are built on. See compute_device.h.
 * Public: compute_device_set, compute_device_gpu, compute_device_forced_cpu. */
#include "base/compute_device.h"

#include <stdlib.h>
#include <string.h>

#include "base/fatal.h"

static int gpu = -1;

void compute_device_set(int g) { gpu = g < 0 ? -1 : g; }
int compute_device_gpu(void) { return gpu; }

int compute_device_forced_cpu(void)
{
    const char *v = getenv("HVDLAB_DEVICE");
    if (!v || !*v || strcmp(v, "auto") == 0)
        return 0;
    if (strcmp(v, "cpu") == 0)
        return 1;
    fatal_error("HVDLAB_DEVICE=%s: expected cpu (the CPU even where a GPU is visible) or auto "
                "(the default: a GPU where the build and the machine have one)", v);
}
