// WorkerId: a worker's identity from spawn to reap: its host (index into the job's hosts), its
// slot on that host, and the incarnation of that slot (0 for the first process started there,
// one more for each replacement). The launcher keys processes, output, exits and signals by
// it; a rank is only an attribute of a worker within one generation of the job.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <string>

namespace hvdrun::launcher {

struct WorkerId {
  std::size_t host = 0;
  int slot = 0;
  int incarnation = 0;
  auto operator<=>(const WorkerId&) const = default;
};

// The number a worker is known by to the rendezvous (HVDRUN_SLOT, Join::slot) and to Horovod's
// host updates: unique in the job, in start order, kept when its rank changes.
struct WorkerKey {
  std::uint32_t value = 0;
  auto operator<=>(const WorkerKey&) const = default;
};

// "host 1 slot 0", with " incarnation 2" when it is not the first: for logs.
std::string to_string(const WorkerId& id);

}  // namespace hvdrun::launcher
