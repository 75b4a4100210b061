// resolve_data_address() and the interface listing (see data_address.h).
#include "worker-runtime/data_address.h"

#include "hvdrun/error.h"
#include "rendezvous/env_names.h"

namespace hvdrun {
namespace {

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

const InterfaceAddress* find(std::string_view wanted,
                             const std::vector<InterfaceAddress>& interfaces) {
  for (const auto& i : interfaces) {
    if (i.name == wanted || i.ipv4 == wanted) return &i;
  }
  return nullptr;
}

std::string listing(const std::vector<InterfaceAddress>& interfaces) {
  if (interfaces.empty()) return "none";
  std::string text;
  for (const auto& i : interfaces) text += (text.empty() ? "" : ", ") + i.name + " " + i.ipv4;
  return text;
}

}  // namespace

DataAddress resolve_data_address(std::string_view setting,
                                 const std::vector<InterfaceAddress>& interfaces) {
  const std::string_view whole = trim(setting);
  if (whole.empty() || whole == "0.0.0.0") return {};
  std::string_view rest = whole;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (const InterfaceAddress* match = find(item, interfaces)) {
      return {match->ipv4, match->ipv4};
    }
  }
  throw UsageError(std::string(env::kNetworkInterface) + "='" + std::string(whole) +
                   "' names no network interface or IPv4 address of this host (available: " +
                   listing(interfaces) + "); check --network-interface");
}

}  // namespace hvdrun
