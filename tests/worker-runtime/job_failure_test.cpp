// Runtime against a real rendezvous server with threads as ranks: a rank that leaves the job
// mid-collective is named by every other rank (through the failure reports in the key-value
// store), and HVDRUN_NETWORK_INTERFACE picks the data address.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/worker-runtime/ring_harness.h"
#include "tests/worker-runtime/server_thread.h"
#include "worker-runtime/data_address.h"
#include "worker-runtime/job.h"

namespace hvdrun {
namespace {

using std::chrono::milliseconds;

// Rank 1 of 4 destroys its communicator and rendezvous client (as a dying process closes its
// sockets) while the others wait in allreduce. Ranks 0 and 2 are its neighbours; rank 3 sees
// only healthy neighbours hang up and learns the name from their reports.
TEST(JobFailure, RankThatLeavesIsNamedByEveryOtherRank) {
  constexpr int n = 4;
  constexpr int dead = 1;
  ServerThread server(n, std::chrono::seconds(10));
  std::atomic<int> dead_port{0};  // rank 3 knows only its own neighbours' addresses
  const auto errors = test::run_ranks(n, [&](int slot) {
    auto job = std::make_unique<Runtime>(test::job_options(server.port(), slot));
    if (slot == dead) {
      dead_port = job->communicator().ring().addresses().self.port;
      std::this_thread::sleep_for(milliseconds(100));
      job.reset();
      return;
    }
    std::vector<float> data(1 << 20, 1.0f);
    std::string message;
    try {
      job->communicator().allreduce(data.data(), data.data(), data.size(), DataType::kFloat32,
                                    ReduceOp::kSum);
      ADD_FAILURE() << "rank " << slot << ": allreduce succeeded without rank 1";
    } catch (const NetworkError& e) {
      message = e.what();
    }
    const std::string dead_peer = "rank 1 (127.0.0.1:" + std::to_string(dead_port.load()) + ")";
    const bool direct = message.starts_with("allreduce: connection to " + dead_peer + " lost: ");
    const bool reported =
        message.starts_with("allreduce: " + dead_peer + " failed: connection lost: ");
    EXPECT_TRUE(direct || reported) << "rank " << slot << ": " << message;
    if (slot == 3) {
      EXPECT_TRUE(reported) << message;
      EXPECT_NE(message.find(" (seen by rank "), std::string::npos) << message;
    }
  });
  for (const auto& e : errors) EXPECT_EQ(e, nullptr) << test::what(e);
}

TEST(JobFailure, NetworkInterfaceLoBindsAndAdvertisesLoopback) {
  constexpr int n = 2;
  ServerThread server(n, std::chrono::seconds(10));
  const auto errors = test::run_ranks(n, [&](int slot) {
    Options options = test::job_options(server.port(), slot);
    options.network_interface = slot == 0 ? "lo" : "127.0.0.1";
    Runtime job(options);
    const tcp::RingAddresses& addresses = job.communicator().ring().addresses();
    for (const auto* peer : {&addresses.self, &addresses.prev, &addresses.next}) {
      EXPECT_EQ(peer->addr, "127.0.0.1");
    }
    std::int32_t value = slot + 1;
    job.communicator().allreduce(&value, &value, 1, DataType::kInt32, ReduceOp::kSum);
    EXPECT_EQ(value, 3);
  });
  for (const auto& e : errors) EXPECT_EQ(e, nullptr) << test::what(e);
}

TEST(JobFailure, UnknownNetworkInterfaceIsAUsageErrorListingTheAvailableOnes) {
  Options options = test::job_options(1, 0);  // fails before it contacts the rendezvous
  options.network_interface = "bogus0";
  try {
    Runtime job(options);
    FAIL() << "joined with HVDRUN_NETWORK_INTERFACE=bogus0";
  } catch (const UsageError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("HVDRUN_NETWORK_INTERFACE='bogus0' names no network interface"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("lo 127.0.0.1"), std::string::npos) << message;
  }
}

TEST(DataAddress, InterfaceNameOrAddressSelectsBindAndAdvertisedAddress) {
  const std::vector<InterfaceAddress> host{{"lo", "127.0.0.1"}, {"eth0", "10.1.2.3"}};
  const DataAddress none = resolve_data_address("", host);
  EXPECT_EQ(none.bind, "0.0.0.0");
  EXPECT_EQ(none.advertise, "");
  EXPECT_EQ(resolve_data_address("0.0.0.0", host).advertise, "");
  const DataAddress eth0 = resolve_data_address("eth0", host);
  EXPECT_EQ(eth0.bind, "10.1.2.3");
  EXPECT_EQ(eth0.advertise, "10.1.2.3");
  EXPECT_EQ(resolve_data_address("10.1.2.3", host).advertise, "10.1.2.3");
  EXPECT_EQ(resolve_data_address(" ib0, eth0 ", host).advertise, "10.1.2.3");  // first that exists
  EXPECT_THROW(resolve_data_address("10.9.9.9", host), UsageError);            // not this host's
  try {
    resolve_data_address("ib0", host);
    FAIL() << "ib0 accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("(available: lo 127.0.0.1, eth0 10.1.2.3)"),
              std::string::npos)
        << e.what();
  }
}

TEST(DataAddress, ThisHostListsLoopback) {
  const std::vector<InterfaceAddress> host = ipv4_interfaces();
  const DataAddress lo = resolve_data_address("lo", host);
  EXPECT_EQ(lo.bind, "127.0.0.1");
  EXPECT_EQ(resolve_data_address("127.0.0.1", host).bind, "127.0.0.1");
  EXPECT_THROW(resolve_data_address("bogus0", host), UsageError);
}

}  // namespace
}  // namespace hvdrun
