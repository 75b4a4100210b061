// CollectiveGroups: the members' timed collectives (from their heartbeats, rdzv::TimedCollective)
// gathered by collective, (generation, sequence number), until every member of the generation
// timed it. The straggler report reads the complete ones; the timeline draws every one, with
// its wait and transfer times when complete. Bounded: past kMaxPending collectives waiting for
// a member, the oldest is given up as incomplete. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "rendezvous/progress.h"

namespace hvdrun::launcher {

struct CollectiveGroup {
  std::vector<rdzv::TimedCollective> members;  // in the order their samples came
  bool complete = false;                       // every member of the generation timed it

  // Complete: the members all leave together, so the last to arrive spent the least time
  // inside; that time is the transfer, and what a member spent beyond it, its wait.
  std::uint32_t transfer_us() const;
  std::uint32_t wait_us(const rdzv::TimedCollective& member) const;
};

class CollectiveGroups {
 public:
  static constexpr std::size_t kMaxPending = 16384;

  // Samples, most of generation `generation` of `size` members (0: still forming) (samples of an
  // earlier one may be mixed in: each completes with its own generation's size, as it was given
  // then). A worker's second sample of one collective is ignored. Returns the collectives now
  // complete, and those given up to keep the bound.
  std::vector<CollectiveGroup> add(std::vector<rdzv::TimedCollective> samples,
                                   std::uint32_t generation, std::size_t size);
  // Every collective still waiting for a member, given up (the job ends).
  std::vector<CollectiveGroup> flush();
  std::size_t pending() const noexcept { return pending_.size(); }

 private:
  struct Pending {
    std::size_t size = 0;
    CollectiveGroup group;
  };
  std::map<std::pair<std::uint32_t, std::uint32_t>, Pending> pending_;  // (generation, seq)
  std::map<std::uint32_t, std::size_t> sizes_;  // generation -> its size (the last few)
};

}  // namespace hvdrun::launcher
