// Runtime: this process's membership in a job. It holds the rendezvous connection, kept for
// the job's life, apart from the communicator of the current generation (ring, backend,
// abort signal), so that a generation can be dropped and another formed over the same
// connection. Built at init(): rendezvous JOIN/ASSIGN, the TCP ring, the backend choice and
// NCCL when chosen; without a rendezvous address, a world of one process (with NCCL on one
// GPU when chosen). In an elastic job (HVDRUN_ELASTIC) a GenerationEnd pushed by the launcher
// aborts the current generation's pending waits at once (kBroken), and reform() joins the next
// generation on the same connection. Thread rules: as hvdrun.h; abort() from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "rendezvous/client.h"
#include "worker-runtime/backend_setup.h"
#include "worker-runtime/collective_progress.h"
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
  // What the collectives of this generation are doing, for the heartbeats.
  CollectiveProgress& progress() noexcept { return progress_; }
  // Ends every blocking wait of the current generation with AbortedError naming `reason`.
  void abort(const std::string& reason) noexcept { communicator_->abort(reason); }

  bool elastic() const noexcept { return options_.elastic; }
  // The launcher ended this process's generation (a failure elsewhere, or hosts changed).
  bool generation_ended() const;
  // Drops the current generation's communicator and joins the next generation on the same
  // connection, waiting up to the elastic timeout for it. Throws UsageError outside an
  // elastic job, WorkerFailedError if this worker is not in the next generation.
  void reform();

 private:
  // The current generation's communicator, from an assignment received over client_ (opened
  // by the first call, after the data socket is bound); `rejoin`: of the generation after the
  // one that ended, which may reuse `previous` (the ended generation's device backend).
  std::unique_ptr<Communicator> form_generation(bool rejoin, PreviousDevice previous = {});
  // form_generation(); in an elastic job, while the generation being formed breaks after
  // its assignment came (the first generation included), the next one.
  std::unique_ptr<Communicator> form_until_formed(bool rejoin, PreviousDevice previous);
  // On the client's reader thread: a broken generation aborts what the communicator waits for.
  void on_generation_end(const rdzv::GenerationEndEvent& event);
  void watch(std::shared_ptr<AbortSignal> abort, std::uint32_t generation);
  std::unique_ptr<Communicator> form_world_of_one();

  Options options_;
  CollectiveProgress progress_;           // read by client_'s heartbeats: declared before it
  std::unique_ptr<rdzv::Client> client_;  // declared first: outlives the communicator
  std::unique_ptr<Communicator> communicator_;
  std::uint32_t generation_ = 0;           // communicator_'s
  std::optional<std::uint32_t> assigned_;  // the generation of the last assignment received
  mutable std::mutex watch_mutex_;         // guards the two below (the reader thread reads them)
  std::shared_ptr<AbortSignal> watched_abort_;  // the current generation's
  std::uint32_t watched_generation_ = 0;
};

// This process's Runtime between hvdrun::init() and shutdown(); UsageError naming `function`
// otherwise (runtime.cpp holds it).
Runtime& active_runtime(const char* function);

}  // namespace hvdrun
