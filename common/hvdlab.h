/* hvdlab.h — everything a lab program uses, in one include.
 *
 *   hvd.h       hvd_init, hvd_rank, hvd_size, collectives        device.h   hvd_pin_device
 *   args.h      the lab's command-line flags                     dataset.h  Fashion-MNIST
 *   loader.h    sharded, shuffled, augmented batches             wrn.h      the WideResNet
 *   optim.h     SGD, NovoGrad, hvd_distributed_optimizer         lr.h       scaling, warmup, schedule
 *   metrics.h   running metrics, hvd_metric_average              progress.h Keras-style output
 *   ckpt.h      checkpoints                                      fatal.h    fatal_error: stop every rank
 *   errmsg.h    ERRMSG_LEN, the size of an error buffer
 *   lab.h       the loaders, evaluation, batch buffers and banner that no lab step changes
 */
#ifndef HVDLAB_HVDLAB_H
#define HVDLAB_HVDLAB_H

#include "base/errmsg.h"
#include "base/fatal.h"
#include "ckpt/ckpt.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "hvd/device.h"
#include "hvd/hvd.h"
#include "model/wrn.h"
#include "optim/lr.h"
#include "optim/optim.h"
#include "train/args.h"
#include "train/lab.h"
#include "train/metrics.h"
#include "train/progress.h"
#include "train/resume.h"

#endif
