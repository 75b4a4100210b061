// Runtime: this process's membership in a job. It holds the rendezvous connection, kept for
// the job's life, apart from the communicator of the current generation (ring, backend,
// abort signal), so that a generation can be dropped and another formed over the same
// connection. Built at init(): rendezvous JOIN/ASSIGN, the TCP ring, the backend choice and
// NCCL when chosen; without a rendezvous address, a world of one process (with NCCL on one
// GPU when chosen). Thread rules: as hvdrun.h; abort() from any thread.
#pragma once

#include <memory>
#include <string>

#include "rendezvous/client.h"
#include "worker-runtime/communicator.h"
#include "worker-runtime/options.h"

namespace hvdrun {

class Runtime {
 public:
  // Joins the job. Errors name the rendezvous address and slot and keep their kind (Usage,
  // Timeout, ...).
  explicit Runtime(Options options);
  ~Runtime();  // the generation first, then the connection
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  Communicator& communicator() const noexcept { return *communicator_; }
  // The rendezvous connection (key-value store, barriers); null in a world of one.
  rdzv::Client* client() const noexcept { return client_.get(); }
  // Ends every blocking wait of the current generation with AbortedError naming `reason`.
  void abort(const std::string& reason) noexcept { communicator_->abort(reason); }

 private:
  // The current generation's communicator, from an assignment received over client_ (opened
  // by the first call, after the data socket is bound).
  std::unique_ptr<Communicator> form_generation();
  std::unique_ptr<Communicator> form_world_of_one();

  Options options_;
  std::unique_ptr<rdzv::Client> client_;  // declared first: outlives the communicator
  std::unique_ptr<Communicator> communicator_;
};

}  // namespace hvdrun
