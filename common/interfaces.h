// This host's network interfaces and routes, for the launcher (the interface a host's workers
// use for Horovod's Gloo and NCCL), the remote agent (the same, on its host) and libhvdrun
// (the data-plane address of HVDRUN_NETWORK_INTERFACE).
#pragma once

#include <string>
#include <vector>

namespace hvdrun {

struct InterfaceAddress {
  std::string name;  // "lo", "eth0"
  std::string ipv4;  // "127.0.0.1"
};

// This host's interfaces that have an IPv4 address, in the kernel's order. Throws
// NetworkError if they cannot be listed.
std::vector<InterfaceAddress> ipv4_interfaces();

// The name of the interface holding IPv4 address `ipv4` in `interfaces`; empty if none.
std::string interface_with_address(const std::string& ipv4,
                                   const std::vector<InterfaceAddress>& interfaces);

// The IPv4 address this host sends from to reach `ipv4` (the kernel's route choice, found by
// connecting a UDP socket: no packet is sent); empty if there is no route.
std::string route_source_address(const std::string& ipv4);

}  // namespace hvdrun
