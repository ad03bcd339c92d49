/* env_switch.c — on/off environment switches. See env_switch.h.
 * Public: env_switch_on, env_switch_name, env_switch_default, env_switch_check_all, env_switch,
 * env_switch_parse. */
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

static const struct {
    const char *name;
    int dflt;
} switches[SWITCH_COUNT] = {
    [SWITCH_TF32] = {"HVDLAB_TF32", 1},
    [SWITCH_CUDNN_DETERMINISTIC] = {"HVDLAB_CUDNN_DETERMINISTIC", 1},
    [SWITCH_BIAS_GRAD_CUBLAS] = {"HVDLAB_BIAS_GRAD_CUBLAS", 1},
    [SWITCH_BN_SPLIT] = {"HVDLAB_BN_SPLIT", 1},
    [SWITCH_BN_BATCH] = {"HVDLAB_BN_BATCH", 0},
    [SWITCH_BIAS_IN_BN] = {"HVDLAB_BIAS_IN_BN", 1},
    [SWITCH_CUDA_SYNC] = {"HVDLAB_CUDA_SYNC", 0},
    [SWITCH_REPORT_BINDINGS] = {"HVDLAB_REPORT_BINDINGS", 0},
};

const char *env_switch_name(env_switch_id id) { return switches[id].name; }

int env_switch_default(env_switch_id id) { return switches[id].dflt; }

int env_switch_on(env_switch_id id) { return env_switch(switches[id].name, switches[id].dflt); }

void env_switch_check_all(void)
{
    for (int i = 0; i < SWITCH_COUNT; i++)
        env_switch_on((env_switch_id)i);
}
