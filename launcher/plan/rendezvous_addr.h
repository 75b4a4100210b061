// Which address the rendezvous server binds and which addresses the workers are given.
//   - --rendezvous-addr: bind it (a host name: 127.0.0.1, or 0.0.0.0 with a remote host or
//     a discovery script); every worker uses it.
//   - --network-interface: bind the address of the first one; every worker uses it, also in
//     a job that starts on this machine only (an elastic one may take remote hosts later).
//   - Only local hosts: bind 127.0.0.1; workers use 127.0.0.1.
//   - Some remote host: bind 0.0.0.0. A remote host's workers use hvdrun's address on the
//     route to that host (the local address of its SSH connection), and the local workers
//     use the one of the first remote host, so that the address their TCP ring advertises
//     (the local address of their rendezvous connection) is reachable from the other hosts.
//   - MASTER_ADDR: rank 0's host as the worker reaches it: rank 0 on this machine -> the
//     worker's own rendezvous address; rank 0 remote -> that host's connected address.
#pragma once

#include <string>

#include "launcher/spec/job_spec.h"

namespace hvdrun::launcher {

struct AddressPlan {
  std::string bind;   // the rendezvous server's bind address
  std::string fixed;  // non-empty: the address every worker uses
};

// Throws UsageError if --network-interface names no interface with an address, or if a host
// name given as --rendezvous-addr for a job without remote hosts does not resolve here.
AddressPlan plan_addresses(const JobSpec& spec, bool any_remote);

// The first IPv4 (else IPv6) address of a network interface; UsageError naming the
// interfaces that exist if there is none.
std::string interface_address(const std::string& name);

}  // namespace hvdrun::launcher
