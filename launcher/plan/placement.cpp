// Slot -> rank placement (horovodrun's rule): fill the hosts in order, stop at exactly
// num_proc ranks; local and cross ranks and sizes are computed over the placed ranks only.
#include "launcher/plan/placement.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "hvdrun/error.h"
#include "launcher/spec/hosts.h"
#include "launcher/spec/local_host.h"

namespace hvdrun::launcher {
namespace {

// "a:2, b:2" (the first few hosts, then how many more).
std::string slots_summary(const std::vector<HostSpec>& hosts) {
  constexpr std::size_t kShown = 6;
  std::string text;
  for (std::size_t i = 0; i < hosts.size() && i < kShown; ++i) {
    if (i > 0) text += ", ";
    text += hosts[i].name + ":" + std::to_string(hosts[i].slots);
  }
  if (hosts.size() > kShown) text += ", and " + std::to_string(hosts.size() - kShown) + " more";
  return text;
}

}  // namespace

void check_enough_slots(const std::vector<HostSpec>& hosts, int num_proc) {
  if (num_proc < 1) {
    throw UsageError("-np " + std::to_string(num_proc) +
                     ": the number of processes must be at least 1");
  }
  if (hosts.empty())
    throw UsageError("no hosts to place " + std::to_string(num_proc) + " processes on");
  std::int64_t total = 0;
  for (const auto& host : hosts) total += std::max(host.slots, 0);
  if (total < num_proc) {
    throw UsageError("-np " + std::to_string(num_proc) + " but the hosts give only " +
                     std::to_string(total) + (total == 1 ? " slot (" : " slots (") +
                     slots_summary(hosts) + ")");
  }
}

std::vector<Slot> place(const std::vector<HostSpec>& hosts, int num_proc) {
  check_enough_slots(hosts, num_proc);
  // Ranks per host, in order, until num_proc are placed.
  std::vector<int> placed(hosts.size(), 0);
  int remaining = num_proc;
  for (std::size_t h = 0; h < hosts.size() && remaining > 0; ++h) {
    placed[h] = std::min(std::max(hosts[h].slots, 0), remaining);
    remaining -= placed[h];
  }
  const int max_local = *std::max_element(placed.begin(), placed.end());
  // cross_size[lr] = hosts having a rank at local_rank lr.
  std::vector<int> cross_size(static_cast<std::size_t>(max_local), 0);
  for (const int count : placed) {
    for (int lr = 0; lr < count; ++lr) ++cross_size[static_cast<std::size_t>(lr)];
  }
  const auto node_count =
      static_cast<int>(std::count_if(placed.begin(), placed.end(), [](int n) { return n > 0; }));
  std::vector<Slot> slots;
  slots.reserve(static_cast<std::size_t>(num_proc));
  std::vector<int> seen(static_cast<std::size_t>(max_local), 0);  // hosts so far per lr
  int node_rank = 0;
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    if (placed[h] == 0) continue;
    for (int lr = 0; lr < placed[h]; ++lr) {
      const auto index = static_cast<std::size_t>(lr);
      slots.push_back(Slot{static_cast<int>(slots.size()), lr, placed[h], seen[index]++,
                           cross_size[index], node_rank, node_count, h, hosts[h].name});
    }
    ++node_rank;
  }
  return slots;
}

std::vector<std::size_t> remote_hosts(const std::vector<HostSpec>& hosts,
                                      const std::vector<Slot>& slots,
                                      const std::function<bool(const std::string&)>& is_local) {
  std::vector<std::size_t> out;
  std::optional<std::size_t> local;  // the entry that names this machine
  std::optional<std::size_t> last;
  for (const auto& slot : slots) {
    if (last == slot.host_index) continue;  // slots come host by host
    last = slot.host_index;
    const HostSpec& host = hosts[slot.host_index];
    if (!is_local(host.name)) {
      out.push_back(slot.host_index);
    } else if (local) {
      const HostSpec& first = hosts[*local];
      throw UsageError(host.origin + ": " + quoted(first.name) + " (" + first.origin + ") and " +
                       quoted(host.name) + " are both this machine; list it once with its " +
                       "total slots (local ranks and GPU pinning count one machine's slots)");
    } else {
      local = slot.host_index;
    }
  }
  return out;
}

}  // namespace hvdrun::launcher
