// libFuzzer target: the host-list parsers, whose input is user files and a discovery
// script's output (launcher/hosts.h). The first byte picks the parser (-H text, host file,
// discovery output with or without --slots-per-host); the rest is the text. Errors must be
// UsageErrors, and what parses must be well-formed.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hvdrun/error.h"
#include "launcher/spec/hosts.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hvdrun::launcher;
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
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
