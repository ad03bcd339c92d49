/* device_env.c — HVDLAB_DEVICE. See device_env.h.
 * Public: device_env_forced_cpu. */
#include "base/device_env.h"

#include <stdlib.h>
#include <string.h>

#include "base/fatal.h"

int device_env_forced_cpu(void)
{
    const char *v = getenv("HVDLAB_DEVICE");
    if (!v || !*v || strcmp(v, "auto") == 0)
        return 0;
    if (strcmp(v, "cpu") == 0)
        return 1;
    fatal_error("HVDLAB_DEVICE=%s: expected cpu (the CPU even where a GPU is visible) or auto "
                "(the default: a GPU where the build and the machine have one)", v);
}
