/* env_switch.h — the kit's on/off environment switches (HVDLAB_TF32, HVDLAB_CUDNN_DETERMINISTIC,
 * HVDLAB_BIAS_GRAD_CUBLAS, HVDLAB_BN_SPLIT, HVDLAB_BN_BATCH, HVDLAB_BIAS_IN_BN, HVDLAB_CUDA_SYNC,
 * HVDLAB_REPORT_BINDINGS), read one way everywhere.
 *
 * Unset or empty: the default. "0" or "1": off or on. Anything else stops the process with one
 * line naming the variable, e.g. "HVDLAB_TF32=off: expected 0 or 1 (unset: 1)": a student who
 * writes off, false or no must not get the opposite of what they asked for in silence. (Horovod's
 * own HVD_* flags keep Horovod's reading, any non-zero value is on: coll/hvd.c.)
 */
#ifndef HVDLAB_ENV_SWITCH_H
#define HVDLAB_ENV_SWITCH_H

#ifdef __cplusplus
extern "C" {
#endif

/* 0 or 1: the switch's value, or dflt when it is unset or empty; fatal_error on another value. */
int env_switch(const char *name, int dflt);

/* The same check without stopping: 0 or 1, dflt when unset or empty, -1 on another value. */
int env_switch_parse(const char *value, int dflt);

#ifdef __cplusplus
}
#endif

#endif
