// The backend choice at init(): each rank decides from HVDRUN_BACKEND and its host
// (nccl/backend_choice.h), the ranks agree over the TCP ring (NCCL only if every rank can),
// the decision is logged once at info, and the NCCL backend is started when chosen. The
// device-call check (HVDRUN_CHECK_COLLECTIVES) is agreed in the same exchange: on for every
// rank when any rank set it, since a rank that checked alone would wait for descriptors the
// others never send.
#pragma once

#include <cstdint>
#include <memory>

#include "rendezvous/client.h"
#include "worker-runtime/communicator.h"
#include "worker-runtime/options.h"

namespace hvdrun {

// The device backend of an elastic job's previous generation, retired, which the next one may
// shrink (nccl/comm_plan.h) or else drops.
struct PreviousDevice {
  std::unique_ptr<DeviceCollectives> backend;  // null: none
  std::uint32_t generation = 0;
};

// Collective over all ranks of `communicator` (its ring must be connected); sets its device-call
// check as agreed. `client` is the
// rendezvous connection (null for a world of one). Throws BackendError when HVDRUN_BACKEND=nccl
// cannot be honoured on some rank, or when starting NCCL fails.
void attach_device_backend(Communicator& communicator, rdzv::Client* client, const Options& options,
                           PreviousDevice previous = {});

}  // namespace hvdrun
