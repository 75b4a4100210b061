// Slot: one place of a job's placement and the topology of the worker there: its rank, local,
// cross and node ranks and sizes, and its host (index into the job's hosts, and the name as the
// user wrote it). The launcher's placement fills them (launcher/placement.h); the rendezvous
// server expects them (rendezvous/server.h). One type for both.
#pragma once

#include <cstddef>
#include <string>

namespace hvdrun {

struct Slot {
  int rank = 0;
  int local_rank = 0;
  int local_size = 1;
  int cross_rank = 0;
  int cross_size = 1;
  // The host's place among the hosts with a rank in this generation, in order of their first
  // rank, and their number (torchrun's GROUP_RANK and GROUP_WORLD_SIZE).
  int node_rank = 0;
  int node_count = 1;
  std::size_t host_index = 0;  // into the job's hosts
  std::string host;            // as written in -H or the host file, for messages
  bool operator==(const Slot&) const = default;
};

}  // namespace hvdrun
