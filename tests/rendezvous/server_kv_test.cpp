// Server key-value store and barriers with real clients: set/get across clients, a blocking
// get woken by a later set, get timeout, barrier completion, reuse and timeout.
#include <gtest/gtest.h>

#include <atomic>
#include <latch>

#include "hvdrun/error.h"
#include "tests/rendezvous/test_util.h"
#include "tests/support/wait_until.h"

namespace hvdrun::rdzv {
namespace {

using namespace std::chrono_literals;
using test::kSecret;
using test::kTimeout;
using test::make_join;
using test::ServerThread;
using test::slot_options;

TEST(ServerKv, SetThenGetAcrossClients) {
  ServerThread server(slot_options(2));
  Client a(server.endpoint(), kSecret, kTimeout), b(server.endpoint(), kSecret, kTimeout);
  const std::string blob("\0\x01nccl-id\xff", 11);
  a.set("nccl_id", blob, kTimeout);
  EXPECT_EQ(b.get("nccl_id", kTimeout), blob);
  a.set("nccl_id", "second", kTimeout);  // a set replaces the value
  EXPECT_EQ(b.get("nccl_id", kTimeout), "second");
  a.set("empty", "", kTimeout);
  EXPECT_EQ(a.get("empty", kTimeout), "");
}

TEST(ServerKv, BlockingGetIsWokenByALaterSet) {
  ServerThread server(slot_options(1));
  Client setter(server.endpoint(), kSecret, kTimeout);
  std::vector<std::thread> getters;
  std::atomic<int> got{0};
  for (int i = 0; i < 3; ++i) {
    getters.emplace_back([&] {
      Client c(server.endpoint(), kSecret, kTimeout);
      if (c.get("late", kTimeout) == "value") ++got;
    });
  }
  EXPECT_TRUE(hvdrun::test::wait_until([&] { return server.pending_gets() == 3; },
                                       std::chrono::seconds(30)))
      << "the three gets wait at the server";
  EXPECT_EQ(got.load(), 0);
  const auto start = std::chrono::steady_clock::now();
  setter.set("late", "value", kTimeout);
  for (auto& t : getters) t.join();
  EXPECT_EQ(got.load(), 3);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

TEST(ServerKv, GetTimesOutWithTheServersMessage) {
  ServerThread server(slot_options(1));
  Client c(server.endpoint(), kSecret, kTimeout);
  const auto start = std::chrono::steady_clock::now();
  try {
    c.get("never", 100ms);
    FAIL() << "get returned";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("key 'never' not set within 100 ms"), std::string::npos)
        << e.what();
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_GE(elapsed, 100ms);
  EXPECT_LT(elapsed, 1500ms);  // the server's answer, not the client's own deadline
  Client other(server.endpoint(), kSecret, kTimeout);  // the server still serves others
  other.set("never", "now", kTimeout);
  EXPECT_EQ(other.get("never", kTimeout), "now");
}

TEST(ServerKv, KeysAreScopedByGenerationOfTheFrame) {
  ServerThread server(slot_options(1));
  test::RawConn raw(server.endpoint().port);
  raw.authenticate(kSecret);
  raw.send(Message{3, KvSet{"k", "v"}});
  auto reply = raw.receive();
  ASSERT_TRUE(reply);
  ASSERT_TRUE(std::holds_alternative<ErrorMsg>(reply->body));
  const auto& e = std::get<ErrorMsg>(reply->body);
  EXPECT_EQ(e.code, ErrorCode::kStaleGeneration);
  EXPECT_EQ(e.text, "KvSet for generation 3 refused: current generation is 0");
  EXPECT_TRUE(raw.closed_by_server());
}

TEST(ServerBarrier, CompletesOnlyWhenAllEnteredAndIsReusable) {
  constexpr int kN = 3;
  ServerThread server(slot_options(kN));
  std::atomic<int> done{0};
  std::latch release_last(1);
  std::vector<std::thread> ranks;
  for (std::uint32_t slot = 0; slot < kN; ++slot) {
    ranks.emplace_back([&, slot] {
      Client c(server.endpoint(), kSecret, kTimeout);
      c.join(make_join(slot), kTimeout);
      if (slot == kN - 1) release_last.wait();
      c.barrier("b", kTimeout);
      ++done;
      c.barrier("b", kTimeout);  // same name again after completion
      c.barrier("other", kTimeout);
    });
  }
  std::this_thread::sleep_for(150ms);
  EXPECT_EQ(done.load(), 0);
  release_last.count_down();
  for (auto& t : ranks) t.join();
  EXPECT_EQ(done.load(), kN);
}

TEST(ServerBarrier, TimeoutNamesTheMissingRanks) {
  ServerThread server(slot_options(2));
  std::latch joined(2), finished(1);
  std::thread other([&] {
    Client c(server.endpoint(), kSecret, kTimeout);
    c.join(make_join(1), kTimeout);
    joined.count_down();
    finished.wait();
  });
  Client c(server.endpoint(), kSecret, kTimeout);
  c.join(make_join(0), kTimeout);
  joined.arrive_and_wait();
  try {
    c.barrier("init", 100ms);
    FAIL() << "barrier completed with one rank";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("barrier 'init' not complete within 100 ms: 1/2 ranks "
                                         "entered; missing: rank 1 (host host0)"),
              std::string::npos)
        << e.what();
  }
  finished.count_down();
  other.join();
}

TEST(ServerBarrier, BeforeJoinIsRefused) {
  ServerThread server(slot_options(2));
  Client c(server.endpoint(), kSecret, kTimeout);
  try {
    c.barrier("b", kTimeout);
    FAIL() << "barrier accepted before join";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("Barrier 'b' before Join"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hvdrun::rdzv
