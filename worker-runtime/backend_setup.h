// The backend choice at init(): each rank decides from HVDRUN_BACKEND and its host
// (nccl/backend_choice.h), the ranks agree over the TCP ring (NCCL only if every rank can),
// the decision is logged once at info, and the NCCL backend is started when chosen.
#pragma once

#include "rendezvous/client.h"
#include "worker-runtime/communicator.h"
#include "worker-runtime/options.h"

namespace hvdrun {

// Collective over all ranks of `communicator` (its ring must be connected). `client` is the
// rendezvous connection (null for a world of one). Throws BackendError when HVDRUN_BACKEND=nccl
// cannot be honoured on some rank, or when starting NCCL fails.
void attach_device_backend(Communicator& communicator, rdzv::Client* client,
                           const Options& options);

}  // namespace hvdrun
