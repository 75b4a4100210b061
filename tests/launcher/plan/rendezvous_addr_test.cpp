// plan_addresses: what the rendezvous binds and what the workers are given, for
// --rendezvous-addr and --network-interface.
#include "launcher/plan/rendezvous_addr.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hvdrun/error.h"

namespace hvdrun::launcher {
namespace {

using ::testing::HasSubstr;

TEST(PlanAddresses, LocalJobsUseLoopbackAndRemoteOnesEveryAddress) {
  JobSpec spec;
  EXPECT_EQ(plan_addresses(spec, false).bind, "127.0.0.1");
  EXPECT_EQ(plan_addresses(spec, false).fixed, "127.0.0.1");
  EXPECT_EQ(plan_addresses(spec, true).bind, "0.0.0.0");
  EXPECT_EQ(plan_addresses(spec, true).fixed, "");
}

// The interface is used also when the job starts on this machine only (an elastic job may
// take remote hosts later, and they must reach the rendezvous): its address is bound, and an
// interface that does not exist is an error there too, not ignored.
TEST(PlanAddresses, TheNetworkInterfaceIsUsedAlsoForAJobOnThisMachineOnly) {
  JobSpec spec;
  spec.network_interfaces = {"lo"};
  for (const bool any_remote : {false, true}) {
    const auto plan = plan_addresses(spec, any_remote);
    EXPECT_EQ(plan.bind, "127.0.0.1");
    EXPECT_EQ(plan.fixed, "127.0.0.1");
  }
  spec.network_interfaces = {"hvdnosuch0"};
  for (const bool any_remote : {false, true}) {
    try {
      plan_addresses(spec, any_remote);
      ADD_FAILURE() << "no UsageError with any_remote " << any_remote;
    } catch (const UsageError& e) {
      EXPECT_THAT(e.what(), HasSubstr("--network-interface hvdnosuch0: no such interface"));
    }
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
