// Aliases of this machine merged into one host (local_aliases.h).
#include "launcher/spec/local_aliases.h"

#include <algorithm>
#include <optional>

#include "launcher/spec/hosts.h"
#include "launcher/spec/local_host.h"

namespace hvdrun::launcher {

constexpr std::size_t kNamedAliases = 3;

std::string merge_local_aliases(std::vector<HostSpec>& hosts, std::size_t used,
                                const std::function<bool(const std::string&)>& is_local) {
  used = std::min(used, hosts.size());
  std::optional<std::size_t> first;
  std::vector<bool> merged(hosts.size(), false);
  std::string names;
  std::size_t count = 0;
  long long slots = 0;
  for (std::size_t i = 0; i < used; ++i) {
    if (!(is_local ? is_local(hosts[i].name) : is_local_host(hosts[i].name))) continue;
    if (first) merged[i] = true;
    if (!first) first = i;
    // The first few by name: a list of 100,000 aliases is one short line, not megabytes.
    if (count < kNamedAliases) {
      names += (count == 0 ? "" : " and ") + quoted(hosts[i].name) + " (" + hosts[i].origin + ")";
    }
    slots += hosts[i].slots;
    ++count;
  }
  if (count < 2) return {};
  if (count > kNamedAliases) names += " and " + std::to_string(count - kNamedAliases) + " more";
  hosts[*first].slots = static_cast<int>(std::min<long long>(slots, kMaxSlots));
  const std::string line =
      names + (count == 2 ? " both" : " all") + " name this machine: they run as one host, " +
      quoted(hosts[*first].name) + ", with " + std::to_string(hosts[*first].slots) +
      " slots (local ranks and GPUs count one machine's slots)";
  std::size_t out = 0;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    if (merged[i]) continue;
    if (out != i) hosts[out] = std::move(hosts[i]);
    ++out;
  }
  hosts.resize(out);
  return line;
}

std::size_t hosts_used(const std::vector<HostSpec>& hosts, int num_proc) {
  long long filled = 0;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    if (filled >= num_proc) return i;
    filled += hosts[i].slots;
  }
  return hosts.size();
}

}  // namespace hvdrun::launcher
