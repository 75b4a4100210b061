// libFuzzer target: the host-list parsers, whose input is user files, a discovery script's
// output (launcher/hosts.h) and Slurm's environment (slurm_hostlist.h: every input goes
// through both Slurm parsers too). The first byte picks the parser (-H text, host file,
// discovery output with or without --slots-per-host); the rest is the text. Errors must be
// UsageErrors, and what parses must be well-formed.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hvdrun/error.h"
#include "launcher/spec/hosts.h"
#include "launcher/spec/slurm_hostlist.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hvdrun::launcher;
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {  // Slurm's compressed lists: bounded, every name non-empty
    for (const auto& name : expand_slurm_hostlist(text, 100'000)) {
      if (name.empty()) __builtin_trap();
    }
  } catch (const hvdrun::UsageError&) {
  }
  try {
    for (const int count : expand_slurm_tasks_per_node(text, 100'000)) {
      if (count < 1) __builtin_trap();
    }
  } catch (const hvdrun::UsageError&) {
  }
  std::vector<HostSpec> hosts;
  try {
    std::vector<std::string> notes;
    switch (data[0] % 4) {
      case 0:
        hosts = parse_hosts_flag(text);
        break;
      case 1:
        hosts = parse_hostfile_text(text, "hosts.txt", notes);
        break;
      case 2:
        hosts = parse_discovery_output(text, "discover.sh", std::nullopt);
        break;
      default:
        hosts = parse_discovery_output(text, "discover.sh", 1 + data[0] / 4);
        break;
    }
  } catch (const hvdrun::UsageError&) {
    return 0;
  }
  for (const HostSpec& h : hosts) {
    if (h.name.empty() || h.slots < 1 || h.slots > kMaxSlots) __builtin_trap();
  }
  return 0;
}
