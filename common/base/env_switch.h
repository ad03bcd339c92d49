/* env_switch.h — the kit's on/off environment switches (HVDLAB_TF32, HVDLAB_CUDNN_DETERMINISTIC,
 * HVDLAB_BIAS_GRAD_CUBLAS, HVDLAB_BN_SPLIT, HVDLAB_BN_BATCH, HVDLAB_BIAS_IN_BN, HVDLAB_CUDA_SYNC,
 * HVDLAB_REPORT_BINDINGS), read one way everywhere.
 *
 * Unset or empty: the default. "0" or "1": off or on. Anything else stops the process with one
 * line naming the variable, e.g. "HVDLAB_TF32=off: expected 0 or 1 (unset: 1)": a student who
 * writes off, false or no must not get the opposite of what they asked for in silence. Horovod's
 * own on/off flags (HVD_CHECK_COLLECTIVES, HVD_STALL_CHECK_DISABLE, HVD_HIERARCHICAL_ALLREDUCE,
 * HVD_DEAD_RANK_CHECK_DISABLE, HVD_AUTOTUNE, HVD_PROFILE; unset: 0) are read the same way by
 * env_switch where their code starts: Horovod takes false or off as 0, and counting every value
 * but "0" as on gave the opposite.
 */
#ifndef HVDLAB_ENV_SWITCH_H
#define HVDLAB_ENV_SWITCH_H

#ifdef __cplusplus
extern "C" {
#endif

/* The kit's switches. Each has one name and one default, in the table of env_switch.c; code reads
 * a switch by its id so that the default cannot differ from one reader to the next. */
typedef enum {
    SWITCH_TF32,                /* HVDLAB_TF32, 1: TF32 in cuDNN convolutions */
    SWITCH_CUDNN_DETERMINISTIC, /* HVDLAB_CUDNN_DETERMINISTIC, 1: deterministic algorithms only */
    SWITCH_BIAS_GRAD_CUBLAS,    /* HVDLAB_BIAS_GRAD_CUBLAS, 1: NCHW bias gradient by cuBLAS */
    SWITCH_BN_SPLIT,            /* HVDLAB_BN_SPLIT, 1: a large BN channel over several blocks */
    SWITCH_BN_BATCH,            /* HVDLAB_BN_BATCH, 0: BN threads issue four loads at a time */
    SWITCH_BIAS_IN_BN,          /* HVDLAB_BIAS_IN_BN, 1: a conv's bias folded into its BN */
    SWITCH_CUDA_SYNC,           /* HVDLAB_CUDA_SYNC, 0: wait for every kernel launch */
    SWITCH_REPORT_BINDINGS,     /* HVDLAB_REPORT_BINDINGS, 0: print each rank's cores or GPU */
    SWITCH_COUNT
} env_switch_id;

/* 0 or 1: the switch's value, or its default when it is unset or empty; fatal_error on another
 * value. */
int env_switch_on(env_switch_id id);

/* Its variable's name and its default. */
const char *env_switch_name(env_switch_id id);
int env_switch_default(env_switch_id id);

/* Every switch read once: stops at the first one with another value than 0 or 1. */
void env_switch_check_all(void);

/* 0 or 1: the variable's value, or dflt when it is unset or empty; fatal_error on another value.
 * (For a variable outside the table: the tests' own.) */
int env_switch(const char *name, int dflt);

/* The same check without stopping: 0 or 1, dflt when unset or empty, -1 on another value. */
int env_switch_parse(const char *value, int dflt);

#ifdef __cplusplus
}
#endif

#endif
