// The address this worker's ring listener binds and advertises to its peers, from
// HVDRUN_NETWORK_INTERFACE (set by the launcher's --network-interface): an interface name
// ("eth0"), or an IPv4 address of this host, or a comma-separated list of either (the first
// that exists is used). Unset (bind "0.0.0.0", advertise empty): the runtime binds and
// advertises the local address of the rendezvous connection (the route to the launcher;
// loopback for a local job).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/interfaces.h"

namespace hvdrun {

struct DataAddress {
  std::string bind = "0.0.0.0";
  std::string advertise;  // empty: the rendezvous connection's local address
};

// Resolves the setting against `interfaces` (ipv4_interfaces() in production). An empty
// setting or "0.0.0.0" keeps the default. Throws UsageError naming the setting and listing the
// available interfaces when nothing in it matches.
DataAddress resolve_data_address(std::string_view setting,
                                 const std::vector<InterfaceAddress>& interfaces);

}  // namespace hvdrun
