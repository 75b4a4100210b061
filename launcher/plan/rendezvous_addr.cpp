// Rendezvous bind and worker addresses (rendezvous_addr.h). Reads JobSpec: rendezvous_addr,
// network_interfaces.
#include "launcher/plan/rendezvous_addr.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>

#include <boost/asio/ip/address.hpp>
#include <memory>
#include <set>

#include "hvdrun/error.h"

namespace hvdrun::launcher {
namespace {

bool is_ip_literal(const std::string& text) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(text, ec);
  return !ec;
}

// A host name given as --rendezvous-addr for a job on this machine only must resolve here:
// its workers resolve it on this machine, and a name that does not would fail each of them
// later. (With remote hosts it may be a name that only they resolve.)
void check_resolves(const std::string& name) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(name.c_str(), nullptr, &hints, &found);
  if (rc != 0) {
    throw UsageError("--rendezvous-addr " + name + ": cannot resolve it: " + ::gai_strerror(rc));
  }
  ::freeaddrinfo(found);
}

}  // namespace

AddressPlan plan_addresses(const JobSpec& spec, bool any_remote) {
  if (!spec.rendezvous_addr.empty()) {
    const bool literal = is_ip_literal(spec.rendezvous_addr);
    if (!literal && !any_remote) check_resolves(spec.rendezvous_addr);
    // A name: every address, as remote hosts need (also those an elastic job may discover).
    const bool remote_possible = any_remote || !spec.elastic.discovery_script.empty();
    return {literal ? spec.rendezvous_addr : (remote_possible ? "0.0.0.0" : "127.0.0.1"),
            spec.rendezvous_addr};
  }
  if (!spec.network_interfaces.empty()) {
    const auto addr = interface_address(spec.network_interfaces.front());
    return {addr, addr};
  }
  if (!any_remote) return {"127.0.0.1", "127.0.0.1"};
  return {"0.0.0.0", ""};
}

std::string interface_address(const std::string& name) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) throw NetworkError("getifaddrs failed: cannot list interfaces");
  const std::unique_ptr<ifaddrs, void (*)(ifaddrs*)> owner(list, ::freeifaddrs);
  std::string v4, v6;
  std::set<std::string> names;
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr) continue;
    names.insert(entry->ifa_name);
    if (name != entry->ifa_name) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (entry->ifa_addr->sa_family == AF_INET && v4.empty()) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(entry->ifa_addr);
      if (::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text)) v4 = text;
    } else if (entry->ifa_addr->sa_family == AF_INET6 && v6.empty()) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(entry->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr)) continue;
      if (::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text)) v6 = text;
    }
  }
  if (!v4.empty()) return v4;
  if (!v6.empty()) return v6;
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  throw UsageError("--network-interface " + name +
                   ": no such interface with an address (this "
                   "machine has: " +
                   known + ")");
}

}  // namespace hvdrun::launcher
