// with_host_interfaces(): a remote host's workers get HOROVOD_GLOO_IFACE and
// NCCL_SOCKET_IFNAME of the interface on their host's route to hvdrun, unless the launcher
// sent values (-x).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "launcher/agent/agent_worker.h"

namespace hvdrun::launcher::agent {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Not;

TEST(AgentEnv, InterfacesOfTheRouteToTheRendezvous) {
  const auto env = with_host_interfaces({"HOROVOD_GLOO_RENDEZVOUS_ADDR=127.0.0.1", "A=1"});
  EXPECT_THAT(env, ElementsAre("HOROVOD_GLOO_RENDEZVOUS_ADDR=127.0.0.1", "A=1",
                               "HOROVOD_GLOO_IFACE=lo", "NCCL_SOCKET_IFNAME=lo"));
}

TEST(AgentEnv, ValuesFromTheLauncherStay) {
  const auto env =
      with_host_interfaces({"HOROVOD_GLOO_RENDEZVOUS_ADDR=127.0.0.1", "NCCL_SOCKET_IFNAME=ib0"});
  EXPECT_THAT(env, Contains("NCCL_SOCKET_IFNAME=ib0"));
  EXPECT_THAT(env, Not(Contains("NCCL_SOCKET_IFNAME=lo")));
  EXPECT_THAT(env, Contains("HOROVOD_GLOO_IFACE=lo"));
}

TEST(AgentEnv, NothingWithoutARendezvousAddressOrRoute) {
  EXPECT_THAT(with_host_interfaces({"A=1"}), ElementsAre("A=1"));
  EXPECT_THAT(with_host_interfaces({"HOROVOD_GLOO_RENDEZVOUS_ADDR=not-an-address"}),
              ElementsAre("HOROVOD_GLOO_RENDEZVOUS_ADDR=not-an-address"));
}

}  // namespace
}  // namespace hvdrun::launcher::agent
