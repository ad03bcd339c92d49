/* reduce_op.h — how an allreduce combines the ranks' tensors (Horovod's hvd.Sum / hvd.Average).
 * Its own header so that the fusion layer below hvd.h can name it without including the API. */
#ifndef HVDLAB_REDUCE_OP_H
#define HVDLAB_REDUCE_OP_H

typedef enum { HVD_SUM = 0, HVD_AVERAGE = 1 } hvd_op;

#endif
