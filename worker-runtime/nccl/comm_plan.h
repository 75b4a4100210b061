// How an elastic generation gets its NCCL communicator, as a pure function of what every rank
// reported (exchanged over the new generation's ring), so that it is tested without a GPU.
// When the new generation is exactly the survivors of the previous one (ranks were lost, none
// joined), each on the device it had, in the order they had, and every rank's NCCL has
// ncclCommShrink (2.27 or later) on a communicator that is still alive (not aborted after an
// NCCL error or a timeout), the survivors shrink that communicator: no unique id, no new
// bootstrap. Otherwise every rank starts a new communicator from a unique id made by rank 0.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace hvdrun::nccl {

// One rank's report, indexed by its rank in the new generation.
struct MemberComm {
  int device = -1;               // the CUDA device it uses in the new generation
  bool has_shrink = false;       // its NCCL exports ncclCommShrink
  int nccl_version = 0;          // ncclGetVersion(), for the reason
  bool has_previous = false;     // it has a communicator from an earlier generation
  std::uint32_t generation = 0;  // of that communicator (the first generation is 0)
  int rank = -1, size = 0;       // its rank and the size in that communicator
  int previous_device = -1;
  bool alive = false;  // not aborted: it may still be shrunk
};

struct CommPlan {
  bool shrink = false;
  std::vector<int> excluded;  // ranks of the previous communicator to leave out (shrink)
  std::string reason;         // one line for the log
};

CommPlan plan_communicator(std::span<const MemberComm> members);

}  // namespace hvdrun::nccl
