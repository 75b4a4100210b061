// Slot: one place of a job's placement and the topology of the worker there: its rank, local
// and cross ranks and sizes, and its host (index into the job's hosts, and the name as the
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
  std::size_t host_index = 0;  // into the job's hosts
  std::string host;            // as written in -H or the host file, for messages
  bool operator==(const Slot&) const = default;
};

}  // namespace hvdrun
