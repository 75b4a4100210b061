// Slot -> rank placement, the horovodrun rule: fill each host's slots in the order given;
// local_rank = slot index on its host; cross_rank = number of earlier hosts that also have
// this local_rank; cross_size = number of hosts having this local_rank. Exactly num_proc
// slots are used (UsageError if the hosts have fewer slots).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "common/slot.h"
#include "launcher/plan/worker_id.h"
#include "launcher/spec/job_spec.h"

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

// The hosts that received ranks and are not this machine, in host order. Throws UsageError
// when two entries that received ranks name this machine ("localhost", "127.0.0.1", its
// hostname): each would number its local ranks from 0, and two ranks would share GPU 0.
// `is_local`: whether a host name is this machine (LocalHosts::contains, looked up once a name).
std::vector<std::size_t> remote_hosts(const std::vector<HostSpec>& hosts,
                                      const std::vector<Slot>& slots,
                                      const std::function<bool(const std::string&)>& is_local);

}  // namespace hvdrun::launcher
