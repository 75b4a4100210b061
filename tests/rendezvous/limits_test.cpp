// What clients can make the server hold is bounded: the connections waiting to authenticate,
// the key-value store's bytes and keys, each connection's unread replies, and the log lines a
// flood of refused connections gets; a Join whose connection goes away does not leave the
// start timeout running.
#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <thread>

#include "common/log_rate.h"
#include "hvdrun/error.h"
#include "rendezvous/log.h"
#include "rendezvous/memory_budget.h"
#include "tests/rendezvous/test_util.h"
#include "tests/support/wait_until.h"

namespace hvdrun::rdzv {
namespace {

using namespace std::chrono_literals;
using test::kSecret;
using test::kTimeout;
using test::make_join;
using test::RawConn;
using test::ServerThread;
using test::slot_options;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The rendezvous logger's lines from construction to destruction: made before the server and
// gone after it (the logger's sinks do not change while the server logs).
class LogLines {
 public:
  LogLines() { logger()->sinks().push_back(sink_); }
  ~LogLines() { logger()->sinks().pop_back(); }
  LogLines(const LogLines&) = delete;
  LogLines& operator=(const LogLines&) = delete;

  bool has(const std::string& text) const {
    const auto lines = sink_->last_formatted();
    return std::any_of(lines.begin(), lines.end(),
                       [&](const std::string& line) { return contains(line, text); });
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_ =
      std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(1000);
};

TEST(Limits, DefaultsGrowWithTheJob) {
  const KvLimits small = kv_limits_for(slot_options(4));
  EXPECT_EQ(small.max_bytes, std::size_t{256} << 20);
  EXPECT_EQ(small.max_keys, 65536u);
  EXPECT_EQ(small.max_unsent_bytes, std::size_t{64} << 20);
  const KvLimits big = kv_limits_for(slot_options(8192));
  EXPECT_EQ(big.max_bytes, std::size_t{8192} << 16);
  EXPECT_EQ(big.max_keys, 8192u * 64);
}

TEST(Limits, AKvSetOverTheByteLimitIsRefusedAndItsConnectionClosed) {
  ServerOptions options = slot_options(1);
  options.kv_max_bytes = 4096;
  ServerThread server(options);
  Client c(server.endpoint(), kSecret, kTimeout);
  c.join(make_join(0), kTimeout);
  c.set("a", std::string(2000, 'x'), kTimeout);
  c.set("a", std::string(3000, 'y'), kTimeout);  // replaces: still under the limit
  try {
    c.set("b", std::string(2000, 'z'), kTimeout);
    FAIL() << "the store took more than its limit";
  } catch (const ProtocolError& e) {
    EXPECT_TRUE(contains(e.what(),
                         "KvSet of 'b' (2000 bytes) refused: the key-value store would "
                         "hold 5130 bytes, over its limit of 4096"))
        << e.what();
  }
  Client other(server.endpoint(), kSecret, kTimeout);  // the server goes on
  EXPECT_EQ(other.get("a", kTimeout), std::string(3000, 'y'));
}

TEST(Limits, AKvSetOverTheKeyLimitIsRefused) {
  ServerOptions options = slot_options(1);
  options.kv_max_keys = 3;
  ServerThread server(options);
  Client c(server.endpoint(), kSecret, kTimeout);
  for (const char* key : {"k1", "k2", "k3"}) c.set(key, "v", kTimeout);
  c.set("k3", "again", kTimeout);  // an existing key is not a new one
  try {
    c.set("k4", "v", kTimeout);
    FAIL() << "a fourth key was stored";
  } catch (const ProtocolError& e) {
    EXPECT_TRUE(contains(e.what(), "the key-value store holds its limit of 3 keys")) << e.what();
  }
}

// A client asks for a 64 KiB value 400 times and never reads: once 1 MiB of replies waits,
// the server closes that connection instead of holding 25 MiB for it.
TEST(Limits, AClientThatDoesNotReadIsDisconnected) {
  ServerOptions options = slot_options(1);
  options.max_unsent_bytes = 1 << 20;
  const LogLines log;
  ServerThread server(options);
  Client setter(server.endpoint(), kSecret, kTimeout);
  setter.set("big", std::string(64 << 10, 'v'), kTimeout);
  RawConn raw(server.endpoint().port);
  raw.authenticate(kSecret);
  for (int i = 0; i < 400; ++i) raw.send(Message{0, KvGet{"big", 1000}});
  // The server answers into a full socket, until it gives that connection up.
  EXPECT_TRUE(hvdrun::test::wait_until(
      [&] { return log.has("bytes of replies unread, over the limit"); }, 30s));
  int replies = 0;
  while (raw.receive()) ++replies;  // what the kernel held, then the close
  EXPECT_LT(replies, 400);
  EXPECT_EQ(setter.get("big", kTimeout).size(), std::size_t{64} << 10);  // others are served
}

// Three clients each ask for a 256 KiB value 120 times and do not read (30 MiB each, under
// the 64 MiB a connection may hold): together they would make the server hold tens of MiB,
// over its budget of 16 MiB for all clients, so it closes connections instead; without the
// budget every client got all its replies. Others are still served.
TEST(Limits, ManyConnectionsTogetherStayWithinOneBudget) {
  ServerOptions options = slot_options(1);
  options.max_held_bytes = 16u << 20;
  EXPECT_EQ(kv_limits_for(options).max_unsent_bytes, std::size_t{64} << 20);
  const LogLines log;
  ServerThread server(options);
  Client setter(server.endpoint(), kSecret, kTimeout);
  setter.set("big", std::string(256 << 10, 'v'), kTimeout);
  std::vector<std::unique_ptr<RawConn>> raws;
  for (int c = 0; c < 3; ++c) {
    raws.push_back(std::make_unique<RawConn>(server.endpoint().port));
    raws.back()->authenticate(kSecret);
    for (int i = 0; i < 120; ++i) raws.back()->send(Message{0, KvGet{"big", 1000}});
  }
  // The server answers into full sockets, until it closes a connection for its budget.
  EXPECT_TRUE(hvdrun::test::wait_until(
      [&] { return log.has("would make the server hold more than"); }, 30s));
  int complete = 0;
  for (auto& raw : raws) {
    int replies = 0;
    while (raw->receive()) {
      if (++replies == 120) break;
    }
    if (replies == 120) ++complete;
  }
  EXPECT_LT(complete, 3);
  EXPECT_EQ(setter.get("big", kTimeout).size(), std::size_t{256} << 10);  // others are served
}

TEST(Limits, TheBudgetForAllClientsGrowsWithTheJob) {
  EXPECT_EQ(kv_limits_for(slot_options(4)).max_held_bytes, std::size_t{256} << 20);
  EXPECT_EQ(kv_limits_for(slot_options(8192)).max_held_bytes, std::size_t{8192} << 16);
}

TEST(MemoryBudget, SharesAreGivenBackWhenTheyGo) {
  MemoryBudget budget(100);
  {
    BudgetShare a(budget);
    BudgetShare b(budget);
    EXPECT_TRUE(a.grow(60));
    EXPECT_FALSE(b.grow(41));  // over the limit: nothing taken
    EXPECT_EQ(budget.held(), 60u);
    EXPECT_TRUE(b.grow(40));
    a.shrink(10);
    EXPECT_EQ(budget.held(), 90u);
    a.shrink(1000);  // at most what it holds
    EXPECT_EQ(a.held(), 0u);
    EXPECT_EQ(budget.held(), 40u);
  }
  EXPECT_EQ(budget.held(), 0u);
}

// Slot 0 joins and goes away; 600 ms later (start timeout 300 ms) both slots join: the
// generation forms, because the clock stopped when the only joined slot left.
TEST(Limits, AJoinThatGoesAwayStopsTheStartTimeout) {
  ServerOptions options = slot_options(2);
  options.start_timeout = 300ms;
  std::atomic<int> errors{0};
  ServerThread server(options, {[&](const JobError&) { ++errors; }, {}, {}, {}});
  {
    RawConn raw(server.endpoint().port);
    raw.authenticate(kSecret);
    raw.send(Message{0, make_join(0)});
    EXPECT_TRUE(
        hvdrun::test::wait_until([&] { return server.joined() != 0; }, std::chrono::seconds(30)))
        << "a worker joined";
  }
  EXPECT_TRUE(
      hvdrun::test::wait_until([&] { return server.joined() == 0; }, std::chrono::seconds(30)))
      << "the join went with its connection";
  std::this_thread::sleep_for(600ms);
  std::vector<std::thread> ranks;
  for (std::uint32_t slot = 0; slot < 2; ++slot) {
    ranks.emplace_back([&, slot] {
      Client c(server.endpoint(), kSecret, kTimeout);
      EXPECT_EQ(c.join(make_join(slot), kTimeout).assign.size, 2);
    });
  }
  for (auto& t : ranks) t.join();
  EXPECT_EQ(errors.load(), 0);
}

std::size_t open_files() {
  const std::filesystem::directory_iterator fds("/proc/self/fd");
  return static_cast<std::size_t>(std::distance(begin(fds), end(fds)));
}

// With at most 4 connections waiting to authenticate, 24 silent ones leave the server holding
// 4 (the rest wait in the listen backlog, unanswered); each that authenticates or closes lets
// the next one in, and the wait is logged.
TEST(Limits, ConnectionsWaitingToAuthenticateAreCapped) {
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100);
  logger()->sinks().push_back(sink);
  ServerOptions options = slot_options(1);
  options.max_unauthenticated = 4;
  options.shed_after = 60s;  // not in this test
  ServerThread server(options);
  const std::size_t before = open_files();
  std::vector<std::unique_ptr<RawConn>> conns;
  for (int i = 0; i < 24; ++i) conns.push_back(std::make_unique<RawConn>(server.endpoint().port));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(conns[i]->readable_within(kTimeout)) << i;
  EXPECT_FALSE(conns[4]->readable_within(300ms)) << "a fifth connection was challenged";
  EXPECT_LE(open_files() - before, 24u + 4u);
  conns[0]->authenticate(kSecret);
  ASSERT_TRUE(conns[4]->readable_within(kTimeout)) << "an authentication made no room";
  EXPECT_FALSE(conns[5]->readable_within(100ms));
  conns[1].reset();
  ASSERT_TRUE(conns[5]->readable_within(kTimeout)) << "a close made no room";
  conns[0]->send(Message{0, make_join(0)});
  const auto assign = conns[0]->receive();
  ASSERT_TRUE(assign && std::holds_alternative<Assign>(assign->body));
  logger()->sinks().pop_back();
  const auto lines = sink->last_formatted();
  ASSERT_FALSE(lines.empty());
  EXPECT_TRUE(contains(lines.front(),
                       "4 connections have not authenticated, the most that may "
                       "wait; new connections wait in the listen backlog"))
      << lines.front();
}

// At the limit, a connection that has waited shed_after without authenticating is closed to
// let the next one in, with an error that says why.
TEST(Limits, AtTheLimitAConnectionSilentForTooLongIsShed) {
  ServerOptions options = slot_options(1);
  options.max_unauthenticated = 2;
  options.shed_after = 200ms;
  ServerThread server(options);
  const auto start = std::chrono::steady_clock::now();
  RawConn first(server.endpoint().port);
  RawConn second(server.endpoint().port);
  ASSERT_TRUE(first.readable_within(kTimeout));
  ASSERT_TRUE(second.readable_within(kTimeout));
  RawConn next(server.endpoint().port);
  EXPECT_FALSE(next.readable_within(100ms));
  next.authenticate(kSecret);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 200ms) << "shed before shed_after";
  ASSERT_TRUE(first.receive());  // its challenge
  const auto error = first.receive();
  ASSERT_TRUE(error && std::holds_alternative<ErrorMsg>(error->body));
  EXPECT_EQ(std::get<ErrorMsg>(error->body).code, ErrorCode::kTimeout);
  EXPECT_EQ(std::get<ErrorMsg>(error->body).text,
            "not authenticated within 200 ms while the server was full");
  EXPECT_TRUE(first.closed_by_server());
  next.send(Message{0, make_join(0)});
  const auto assign = next.receive();
  ASSERT_TRUE(assign && std::holds_alternative<Assign>(assign->body));
}

TEST(LogRate, OneLineAnIntervalWithTheCountHeldBack) {
  using Clock = LogRate::Clock;
  LogRate rate;
  const auto t0 = Clock::time_point{} + std::chrono::hours(1);
  std::uint64_t held_back = 99;
  EXPECT_TRUE(rate.admit(held_back, t0));
  EXPECT_EQ(held_back, 0u);
  for (int i = 1; i <= 5; ++i) EXPECT_FALSE(rate.admit(held_back, t0 + i * 100ms));
  EXPECT_EQ(rate.held_back(), 5u);
  EXPECT_TRUE(rate.admit(held_back, t0 + 1s));
  EXPECT_EQ(held_back, 5u);
  EXPECT_EQ(rate.hits(), 7u);
}

// 300 connections that send garbage instead of authenticating: each is closed, the server
// goes on, and its log gets a line a second with a count, not 300 lines.
TEST(Limits, AFloodOfGarbageConnectionsIsLoggedInSummaryLines) {
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(10000);
  logger()->sinks().push_back(sink);
  ServerThread server(slot_options(1));
  for (int i = 0; i < 300; ++i) {
    RawConn raw(server.endpoint().port);
    raw.send_bytes(std::vector<std::uint8_t>(64, 0x5a));
    while (raw.receive()) {  // the challenge and the error, then the close
    }
  }
  Client c(server.endpoint(), kSecret, kTimeout);  // still served
  EXPECT_EQ(c.join(make_join(0), kTimeout).assign.size, 1);
  logger()->sinks().pop_back();
  const auto lines = sink->last_formatted();
  EXPECT_GE(lines.size(), 1u);
  EXPECT_LE(lines.size(), 6u) << lines.back();
}

}  // namespace
}  // namespace hvdrun::rdzv
