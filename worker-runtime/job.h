// Joining the job at init(): rendezvous with the launcher's server, receive rank and peer
// table, connect the TCP ring, choose the backend and start NCCL when chosen. Without a
// rendezvous address: a world of one process (with NCCL on one GPU when chosen).
#pragma once

#include <memory>

#include "client.h"
#include "communicator.h"
#include "options.h"

namespace hvdrun {

struct JobConnection {
  std::unique_ptr<rdzv::Client> client;  // kept for key-value / barrier use; null when alone
  std::unique_ptr<Communicator> communicator;
};

// Errors name the rendezvous address and slot, keeping their kind (Usage, Timeout, ...).
JobConnection join_job(const Options& options);

}  // namespace hvdrun
