/* device_env.h — HVDLAB_DEVICE, the user's say over where a rank computes.
 *
 * Read by hvd_pin_device (hvd/device.c), which then records the GPU it pinned (hvd_pinned_gpu),
 * and by the GPU collectives' choice at hvd_init (coll_gpu/gpu_ops.c), which sit in different
 * folders; the reader sits below both so that both read it one way.
 *
 * Public: device_env_forced_cpu.
 */
#ifndef HVDLAB_DEVICE_ENV_H
#define HVDLAB_DEVICE_ENV_H

/* HVDLAB_DEVICE: 1 for cpu (the CPU even in a CUDA build with a GPU), 0 for auto or unset;
 * another value stops the job with one line. */
int device_env_forced_cpu(void);

#endif
