// Whether a host name is this machine. Cheap checks first (localhost, loopback literals, the
// hostname); only then a getaddrinfo() lookup compared against getifaddrs() addresses.
#include "launcher/spec/local_host.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/ascii_case.h"

namespace hvdrun::launcher {
namespace {

struct AddrInfoFree {
  void operator()(addrinfo* info) const { freeaddrinfo(info); }
};
struct IfAddrsFree {
  void operator()(ifaddrs* list) const { freeifaddrs(list); }
};

// An address as family + raw bytes (IPv4 4 bytes, IPv6 16 bytes; no port, no scope).
struct RawAddress {
  int family = 0;
  std::array<unsigned char, 16> bytes{};
  bool operator==(const RawAddress&) const = default;
};

bool to_raw(const sockaddr* addr, RawAddress& out) {
  if (addr == nullptr) return false;
  out = RawAddress{};
  out.family = addr->sa_family;
  if (addr->sa_family == AF_INET) {
    const auto* in4 = reinterpret_cast<const sockaddr_in*>(addr);
    std::memcpy(out.bytes.data(), &in4->sin_addr, sizeof in4->sin_addr);
    return true;
  }
  if (addr->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
    std::memcpy(out.bytes.data(), &in6->sin6_addr, sizeof in6->sin6_addr);
    return true;
  }
  return false;
}

bool is_loopback(const RawAddress& addr) {
  if (addr.family == AF_INET) return addr.bytes[0] == 127;
  if (addr.family != AF_INET6) return false;
  static constexpr std::array<unsigned char, 16> kLoopback6{0, 0, 0, 0, 0, 0, 0, 0,
                                                            0, 0, 0, 0, 0, 0, 0, 1};
  static constexpr std::array<unsigned char, 12> kMappedPrefix{0, 0, 0, 0, 0,    0,
                                                               0, 0, 0, 0, 0xff, 0xff};
  if (addr.bytes == kLoopback6) return true;  // ::1
  return std::equal(kMappedPrefix.begin(), kMappedPrefix.end(), addr.bytes.begin()) &&
         addr.bytes[12] == 127;  // ::ffff:127.x.y.z
}

std::vector<RawAddress> interface_addresses() {
  ifaddrs* raw_list = nullptr;
  if (getifaddrs(&raw_list) != 0) return {};
  const std::unique_ptr<ifaddrs, IfAddrsFree> list(raw_list);
  std::vector<RawAddress> addresses;
  for (const ifaddrs* it = list.get(); it != nullptr; it = it->ifa_next) {
    RawAddress addr;
    if (to_raw(it->ifa_addr, addr)) addresses.push_back(addr);
  }
  return addresses;
}

// Resolves `name` (numeric only when `numeric`); empty when it does not resolve.
std::vector<RawAddress> resolve(const std::string& name, bool numeric) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = numeric ? AI_NUMERICHOST : 0;
  addrinfo* raw_result = nullptr;
  if (getaddrinfo(name.c_str(), nullptr, &hints, &raw_result) != 0) return {};
  const std::unique_ptr<addrinfo, AddrInfoFree> result(raw_result);
  std::vector<RawAddress> addresses;
  for (const addrinfo* it = result.get(); it != nullptr; it = it->ai_next) {
    RawAddress addr;
    if (to_raw(it->ai_addr, addr)) addresses.push_back(addr);
  }
  return addresses;
}

}  // namespace

struct LocalHosts::Machine {
  std::string hostname;         // lowercase; empty if unknown
  std::vector<RawAddress> own;  // this machine's interface addresses
};

LocalHosts::LocalHosts() : machine_(std::make_unique<Machine>()) {
  std::array<char, 256> buffer{};
  if (gethostname(buffer.data(), buffer.size() - 1) == 0)
    machine_->hostname = ascii_lower(buffer.data());
  machine_->own = interface_addresses();
}

LocalHosts::~LocalHosts() = default;

bool LocalHosts::contains(std::string_view name_as_written) {
  auto name = ascii_lower(name_as_written);
  {
    std::lock_guard lock(mutex_);
    if (const auto it = answers_.find(name); it != answers_.end()) return it->second;
  }
  const bool local = look_up(name);  // maybe DNS: not under the lock
  std::lock_guard lock(mutex_);
  return answers_.emplace(std::move(name), local).first->second;
}

void LocalHosts::add_remote(std::string_view name) {
  std::lock_guard lock(mutex_);
  answers_.insert_or_assign(ascii_lower(name), false);
}

bool LocalHosts::look_up(const std::string& name) const {
  if (name.empty() || name.find('\0') != std::string::npos) return false;
  if (name == "localhost" || name == "localhost.localdomain") return true;
  const std::string& own_name = machine_->hostname;
  if (!own_name.empty() && (name == own_name || name == own_name.substr(0, own_name.find('.')))) {
    return true;
  }
  // A numeric address is compared without DNS; a name needs a lookup.
  auto addresses = resolve(name, /*numeric=*/true);
  if (addresses.empty()) addresses = resolve(name, /*numeric=*/false);
  const auto& own = machine_->own;
  return std::any_of(addresses.begin(), addresses.end(), [&](const RawAddress& addr) {
    return is_loopback(addr) || std::find(own.begin(), own.end(), addr) != own.end();
  });
}

bool is_local_host(std::string_view name) {
  return LocalHosts().contains(name);
}

}  // namespace hvdrun::launcher
