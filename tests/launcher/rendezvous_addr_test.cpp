// plan_addresses: what the rendezvous binds and what the workers are given, for
// --rendezvous-addr and --network-interface.
#include "launcher/rendezvous_addr.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <memory>
#include <optional>
#include <utility>

namespace hvdrun::launcher {
namespace {

// An interface of this machine with an IPv4 address other than loopback: (name, address).
std::optional<std::pair<std::string, std::string>> routable_interface() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return std::nullopt;
  const std::unique_ptr<ifaddrs, void (*)(ifaddrs*)> owner(list, ::freeifaddrs);
  for (const ifaddrs* e = list; e != nullptr; e = e->ifa_next) {
    if (e->ifa_addr == nullptr || e->ifa_addr->sa_family != AF_INET) continue;
    const auto* in = reinterpret_cast<const sockaddr_in*>(e->ifa_addr);
    char text[INET_ADDRSTRLEN] = {};
    if (::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text) == nullptr) continue;
    if (std::string(text).rfind("127.", 0) == 0) continue;
    return std::pair{std::string(e->ifa_name), std::string(text)};
  }
  return std::nullopt;
}

TEST(PlanAddresses, LocalJobsUseLoopbackAndRemoteOnesEveryAddress) {
  JobSpec spec;
  EXPECT_EQ(plan_addresses(spec, false).bind, "127.0.0.1");
  EXPECT_EQ(plan_addresses(spec, false).fixed, "127.0.0.1");
  EXPECT_EQ(plan_addresses(spec, true).bind, "0.0.0.0");
  EXPECT_EQ(plan_addresses(spec, true).fixed, "");
}

// The interface is used also when the job starts on this machine only: an elastic job may
// take remote hosts later, and they must reach the rendezvous.
TEST(PlanAddresses, TheNetworkInterfaceIsUsedAlsoForAJobOnThisMachineOnly) {
  const auto interface = routable_interface();
  if (!interface) GTEST_SKIP() << "no interface with a routable IPv4 address here";
  JobSpec spec;
  spec.network_interfaces = {interface->first};
  for (const bool any_remote : {false, true}) {
    const auto plan = plan_addresses(spec, any_remote);
    EXPECT_EQ(plan.bind, interface->second);
    EXPECT_EQ(plan.fixed, interface->second);
  }
}

// A name is bound as 127.0.0.1 for a job on this machine only, and as every address when
// remote hosts are or may be part of it. (That a name which does not resolve is refused is
// not tested here: finding out would ask a name server.)
TEST(PlanAddresses, ARendezvousAddressThatIsANameBindsWhatTheJobNeeds) {
  JobSpec spec;
  spec.rendezvous_addr = "localhost";
  EXPECT_EQ(plan_addresses(spec, false).bind, "127.0.0.1");
  EXPECT_EQ(plan_addresses(spec, false).fixed, "localhost");
  EXPECT_EQ(plan_addresses(spec, true).bind, "0.0.0.0");
  spec.elastic.discovery_script = "./discover.sh";
  EXPECT_EQ(plan_addresses(spec, false).bind, "0.0.0.0");
  spec.rendezvous_addr = "127.0.0.1";
  EXPECT_EQ(plan_addresses(spec, false).bind, "127.0.0.1");
}

}  // namespace
}  // namespace hvdrun::launcher
