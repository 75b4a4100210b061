// Interfaces and routes of this host (common/interfaces.h).
#include "common/interfaces.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "common/unique_fd.h"
#include "hvdrun/error.h"

namespace hvdrun {

std::vector<InterfaceAddress> ipv4_interfaces() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) {
    throw NetworkError(std::string("cannot list the network interfaces: getifaddrs: ") +
                       std::strerror(errno));
  }
  const std::unique_ptr<ifaddrs, void (*)(ifaddrs*)> owner(list, ::freeifaddrs);
  std::vector<InterfaceAddress> out;
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {};
    const auto* in = reinterpret_cast<const sockaddr_in*>(entry->ifa_addr);
    if (::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text) == nullptr) continue;
    out.push_back({entry->ifa_name, text});
  }
  return out;
}

std::string interface_with_address(const std::string& ipv4,
                                   const std::vector<InterfaceAddress>& interfaces) {
  for (const auto& i : interfaces) {
    if (i.ipv4 == ipv4) return i.name;
  }
  return {};
}

std::string route_source_address(const std::string& ipv4) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9);  // any port: a UDP connect only picks the route
  if (::inet_pton(AF_INET, ipv4.c_str(), &to.sin_addr) != 1) return {};
  const UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0 || ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) {
    return {};
  }
  sockaddr_in from{};
  socklen_t length = sizeof from;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&from), &length) != 0) return {};
  char text[INET_ADDRSTRLEN] = {};
  if (::inet_ntop(AF_INET, &from.sin_addr, text, sizeof text) == nullptr) return {};
  return text;
}

}  // namespace hvdrun
