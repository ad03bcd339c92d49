/* compute_device.h — where the model computes: the GPU hvd_pin_device chose, or the CPU.
 *
 * hvd_pin_device (hvd/device.c) records its choice here; wrn_create (model/) reads it. The
 * model cannot ask hvd/ itself (the two are siblings), so the fact sits below both. -1, the
 * default, is the CPU: programs and tests that never pin a device build CPU models.
 *
 * Public: compute_device_set, compute_device_gpu, compute_device_forced_cpu.
 */
#ifndef HVDLAB_COMPUTE_DEVICE_H
#define HVDLAB_COMPUTE_DEVICE_H

/* gpu >= 0: models built from now on live on that CUDA device; -1: on the CPU. */
void compute_device_set(int gpu);
int compute_device_gpu(void);
/* HVDLAB_DEVICE: 1 for cpu (the CPU even in a CUDA build with a GPU), 0 for auto or unset;
 * another value stops the job with one line. Read by hvd_pin_device and by the GPU
 * collectives' choice at hvd_init (coll_gpu/gpu_ops.c). */
int compute_device_forced_cpu(void);

#endif
