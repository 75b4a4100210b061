// Naming the first failure with a shared FailureBoard: a rank whose ring is destroyed
// mid-collective is named by every surviving rank (its neighbours and the ranks further away),
// a rank that never calls is named by every rank that times out, and the report codec.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/elapsed.h"
#include "tests/worker-runtime/ring_harness.h"
#include "worker-runtime/tcp/blame.h"

namespace hvdrun {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// How the other ranks name `ring`'s rank: by its data listener.
std::string peer_of(const tcp::Ring& ring) {
  return "rank " + std::to_string(ring.rank()) +
         " (127.0.0.1:" + std::to_string(ring.addresses().self.port) + ")";
}

// The error message of fn(), which must throw a NetworkError or (timeout_ok) a TimeoutError.
std::string failure_of(const std::function<void()>& fn, bool timeout_ok = false) {
  try {
    fn();
  } catch (const NetworkError& e) {
    return e.what();
  } catch (const TimeoutError& e) {
    if (!timeout_ok) ADD_FAILURE() << "TimeoutError: " << e.what();
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong error kind: " << e.what();
    return {};
  }
  ADD_FAILURE() << "no error";
  return {};
}

// The message names `dead` either as this rank's own link peer or as the first failure
// reported by another rank.
void expect_names(const std::string& message, const std::string& what, const std::string& dead) {
  const bool direct = message.starts_with(what + ": connection to " + dead + " lost: ");
  const bool reported = message.starts_with(what + ": " + dead + " failed: connection lost: ");
  EXPECT_TRUE(direct || reported) << message;
  EXPECT_NE(message.find("generation 0)"), std::string::npos) << message;
}

// Ranks other than `dead` start a large allreduce; `dead` destroys its ring meanwhile.
void destroy_one_rank(int n, int dead) {
  auto board = std::make_shared<test::LocalFailureBoard>();
  auto rings = test::make_rings(n, milliseconds(10000), 0, board);
  const std::string dead_peer = peer_of(*rings[dead]);
  test::run_ranks(n, [&](int r) {
    if (r == dead) {
      std::this_thread::sleep_for(milliseconds(100));
      rings[r].reset();  // closes both of its links while the others wait in allreduce
      return;
    }
    std::vector<float> data(1 << 20, 1.0f);
    const auto start = Clock::now();
    const std::string message = failure_of([&] {
      rings[r]->allreduce(data.data(), data.data(), data.size(), DataType::kFloat32,
                          ReduceOp::kSum);
    });
    EXPECT_LT(test::seconds_since(start), 5.0) << "rank " << r;
    SCOPED_TRACE("n " + std::to_string(n) + ", rank " + std::to_string(r));
    expect_names(message, "allreduce", dead_peer);
    const bool neighbour = r == (dead + 1) % n || r == (dead + n - 1) % n;
    if (!neighbour) {  // it saw only a neighbour close: the name comes from the reports
      EXPECT_TRUE(message.starts_with("allreduce: " + dead_peer + " failed: ")) << message;
      EXPECT_NE(message.find(" (seen by rank "), std::string::npos) << message;
      EXPECT_NE(message.find(", generation 0); here: connection to rank "), std::string::npos)
          << message;
    }
    // Broken from now on: the next call fails at once, with the same kind and name.
    EXPECT_TRUE(rings[r]->broken());
    const auto again = Clock::now();
    const std::string later = failure_of([&] { rings[r]->barrier(); });
    EXPECT_LT(test::seconds_since(again), 1.0);
    EXPECT_TRUE(later.starts_with("barrier: ring unusable after an earlier error: allreduce: "))
        << later;
    EXPECT_NE(later.find(dead_peer), std::string::npos) << later;
  });
}

TEST(RingFailure, DestroyedPeerFailsOthersWithNetworkErrorNamingIt) {
  destroy_one_rank(3, 2);
}

TEST(RingFailure, RanksFarFromTheDestroyedPeerNameItToo) {
  destroy_one_rank(5, 2);
  destroy_one_rank(5, 0);
}

// Rank 2 stays alive but never calls: every rank times out (or sees a neighbour give up) and
// names rank 2, not the neighbour it was waiting for.
TEST(RingFailure, SilentRankIsNamedByEveryRank) {
  constexpr int n = 4;
  constexpr int silent = 2;
  auto board = std::make_shared<test::LocalFailureBoard>();
  auto rings = test::make_rings(n, milliseconds(300), 0, board);
  const std::string silent_peer = peer_of(*rings[silent]);
  test::run_ranks(n, [&](int r) {
    if (r == silent) {  // keeps its ring open until the others gave up
      std::this_thread::sleep_for(milliseconds(1500));
      return;
    }
    std::int32_t value = r;
    const auto start = Clock::now();
    const std::string message = failure_of(
        [&] { rings[r]->allreduce(&value, &value, 1, DataType::kInt32, ReduceOp::kSum); }, true);
    EXPECT_LT(test::seconds_since(start), 2.0) << "rank " << r;
    const bool direct =
        message.starts_with("allreduce: no data from " + silent_peer + " for 0.3 s");
    const bool reported =
        message.starts_with("allreduce: " + silent_peer + " failed: sent no data for 0.3 s");
    EXPECT_TRUE(direct || reported) << "rank " << r << ": " << message;
    if (r == silent + 1) {
      EXPECT_TRUE(direct) << message;
    }
  });
}

TEST(FailureReport, RoundTripsAndRejectsMalformedText) {
  const tcp::FailureReport report{2, 1, "10.0.0.3:4242", "connection lost: closed by peer"};
  const auto back = tcp::decode_report(tcp::encode(report), 3);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->culprit, 2);
  EXPECT_EQ(back->seen_by, 1);
  EXPECT_EQ(back->where, "10.0.0.3:4242");
  EXPECT_EQ(back->how, report.how);
  // An unknown address (or one that could not be told from the text) travels as unknown.
  for (const std::string where : {"", "a b:1"}) {
    const auto unknown = tcp::decode_report(tcp::encode({0, 1, where, "x y"}), 3);
    ASSERT_TRUE(unknown.has_value()) << where;
    EXPECT_EQ(unknown->where, "");
    EXPECT_EQ(unknown->how, "x y");
  }
  EXPECT_FALSE(tcp::decode_report("", 3).has_value());
  EXPECT_FALSE(tcp::decode_report("2 1 -", 3).has_value());
  EXPECT_FALSE(tcp::decode_report("3 1 - how", 3).has_value());  // rank outside the world
  EXPECT_FALSE(tcp::decode_report("-1 1 - how", 3).has_value());
  EXPECT_FALSE(tcp::decode_report("x 1 - how", 3).has_value());
  EXPECT_FALSE(tcp::decode_report("0 1  how", 3).has_value());  // no address field
  const auto empty_how = tcp::decode_report("0 0 - ", 1);
  ASSERT_TRUE(empty_how.has_value());
  EXPECT_EQ(empty_how->how, "");
}

}  // namespace
}  // namespace hvdrun
