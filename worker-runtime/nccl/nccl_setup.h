// Starting the NCCL backend at init(): the facts the backend choice needs (visible devices,
// NCCL version, NCCL_MULTI_RANK_GPU_ENABLE), then device pinning, the unique id relayed by the
// rendezvous key-value store (key "nccl_id", scoped by generation) and the communicator.
#pragma once

#include <memory>

#include "rendezvous/client.h"
#include "worker-runtime/communicator.h"
#include "worker-runtime/device_collectives.h"
#include "worker-runtime/nccl/backend_choice.h"
#include "worker-runtime/nccl/comm_plan.h"
#include "worker-runtime/options.h"

namespace hvdrun::nccl {

// Rendezvous key under which rank 0 posts the 128-byte ncclUniqueId.
inline constexpr const char* kNcclIdKey = "nccl_id";

DeviceFacts probe_devices();

// Every rank calls it after choosing NCCL on `device`, with the same `plan`. A shrink plan
// shrinks `previous` (the previous generation's NCCL backend); otherwise `previous` is dropped
// (aborted) first, rank 0 creates the id (its bootstrap root lives in this process) and posts
// it, and the others fetch it within the start timeout. `client` may be null only for a world
// of one. Errors keep their kind (BackendError, TimeoutError, NetworkError, ...); raising
// `abort` ends the communicator's creation with AbortedError, and the backend keeps watching
// it.
std::unique_ptr<DeviceCollectives> start_nccl_backend(const Topology& topology, int device,
                                                      rdzv::Client* client, const Options& options,
                                                      const AbortSignal* abort,
                                                      const CommPlan& plan,
                                                      std::unique_ptr<DeviceCollectives> previous);

}  // namespace hvdrun::nccl
