/* env_switch.c — on/off environment switches. See env_switch.h.
 * Public: env_switch, env_switch_parse. */
#include "base/env_switch.h"

#include <stdlib.h>
#include <string.h>

#include "base/fatal.h"

int env_switch_parse(const char *value, int dflt)
{
    if (!value || !*value)
        return dflt;
    if (strcmp(value, "0") == 0)
        return 0;
    if (strcmp(value, "1") == 0)
        return 1;
    return -1;
}

int env_switch(const char *name, int dflt)
{
    const char *v = getenv(name);
    int on = env_switch_parse(v, dflt);
    if (on < 0)
        fatal_error("%s=%s: expected 0 or 1 (unset: %d)", name, v, dflt);
    return on;
}
