/* host_backend.h — the host's way (backend.h), the last row of every table: it takes any
 * tensors. A group is reduced where it lies when it is float and back to back (the model's flat
 * gradient buffer), else through the fusion buffer (fusion_pack.h); allreduce.c picks the
 * algorithm. Broadcast and allgather are MPI's own, in pieces MPI's int counts can hold.
 */
#ifndef HVDLAB_HOST_BACKEND_H
#define HVDLAB_HOST_BACKEND_H

#include "coll/backend.h"

extern const coll_backend host_backend;

#endif
