// The ring's FailureBoard (tcp/failure_board.h) on the job's rendezvous key-value store: rank r
// posts under "ring_failure/<r>", scoped by the generation like every key.
// Thread rules: the thread that runs the collectives (the rdzv::Client's one thread).
// Lifetime: within the Client's.
#pragma once

#include <chrono>
#include <string>

#include "rendezvous/client.h"
#include "worker-runtime/tcp/failure_board.h"

namespace hvdrun {

class RendezvousFailureBoard final : public tcp::FailureBoard {
 public:
  // Posts an empty "no failure" entry for `rank`, so that reads of a live rank's entry never
  // block in the server. Do this before connecting the ring: a peer reads this rank's entry
  // only after its links to this rank existed. `timeout` bounds every request.
  RendezvousFailureBoard(rdzv::Client& client, int rank, std::chrono::milliseconds timeout);

  void post(int rank, const std::string& report) override;
  // Polls the entry until it holds a report or `wait` has passed.
  std::string read(int rank, std::chrono::milliseconds wait) override;

 private:
  rdzv::Client& client_;
  std::chrono::milliseconds timeout_;
};

}  // namespace hvdrun
