// Slot -> rank placement, the horovodrun rule: fill each host's slots in the order given;
// local_rank = slot index on its host; cross_rank = number of earlier hosts that also have
// this local_rank; cross_size = number of hosts having this local_rank. Exactly num_proc
// slots are used (UsageError if the hosts have fewer slots).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/slot.h"
#include "launcher/job_spec.h"
#include "launcher/worker_id.h"

namespace hvdrun::launcher {

using hvdrun::Slot;  // common/slot.h: host_index indexes JobSpec::hosts

// The first worker of a slot: its host, its index on that host, incarnation 0.
inline WorkerId first_worker(const Slot& slot) {
  return {slot.host_index, slot.local_rank, 0};
}

// Throws UsageError "-np 8 but the hosts give only 4 slots (a:2, b:2)" if num_proc exceeds
// the hosts' slots, or if num_proc < 1.
void check_enough_slots(const std::vector<HostSpec>& hosts, int num_proc);

std::vector<Slot> place(const std::vector<HostSpec>& hosts, int num_proc);

}  // namespace hvdrun::launcher
