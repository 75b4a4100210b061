// Server + client on loopback: joins and assignments, authentication, duplicate and
// out-of-range slots, start timeout, and 1,000 joins.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <atomic>

#include "hvdrun/error.h"
#include "rendezvous/auth.h"
#include "tests/rendezvous/test_util.h"
#include "tests/support/wait_until.h"

namespace hvdrun::rdzv {
namespace {

using test::kSecret;
using test::kTimeout;
using test::make_join;
using test::make_slots;
using test::ServerThread;

// Every slot joins from its own thread; returns the assignments by slot.
std::vector<Assignment> join_all(const Endpoint& ep, std::size_t n,
                                 const std::function<Join(std::uint32_t)>& join_of = make_join) {
  std::vector<Assignment> out(n);
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (std::uint32_t slot = 0; slot < n; ++slot) {
    threads.emplace_back([&, slot] {
      try {
        Client c(ep, kSecret, kTimeout);
        out[slot] = c.join(join_of(slot), kTimeout);
      } catch (const std::exception& e) {
        errors[slot] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(errors[i], "") << "slot " << i;
  return out;
}

class Joins : public ::testing::TestWithParam<int> {};

TEST_P(Joins, EveryRankGetsItsAssignmentAndItsRingNeighbours) {
  const int n = GetParam();
  std::atomic<int> completed{0};
  ServerOptions options;
  options.slots = make_slots(n, 4);
  ServerThread server(options, ServerCallbacks{nullptr, [&] { ++completed; }, nullptr, nullptr});
  const auto joined = join_all(server.endpoint(), static_cast<std::size_t>(n));
  for (int slot = 0; slot < n; ++slot) {
    const auto& a = joined[static_cast<std::size_t>(slot)];
    const auto& info = options.slots[static_cast<std::size_t>(slot)];
    EXPECT_EQ(a.generation, 0u);
    EXPECT_EQ(a.assign.rank, info.rank);
    EXPECT_EQ(a.assign.size, n);
    EXPECT_EQ(a.assign.local_rank, info.local_rank);
    EXPECT_EQ(a.assign.local_size, info.local_size);
    EXPECT_EQ(a.assign.cross_rank, info.cross_rank);
    EXPECT_EQ(a.assign.cross_size, info.cross_size);
    // make_slots gives slot s rank s: the neighbours are the joins of slots s - 1 and s + 1.
    const Join prev = make_join(static_cast<std::uint32_t>((slot + n - 1) % n));
    const Join next = make_join(static_cast<std::uint32_t>((slot + 1) % n));
    EXPECT_EQ(a.assign.prev, (PeerAddr{prev.data_addr, prev.data_port})) << "slot " << slot;
    EXPECT_EQ(a.assign.next, (PeerAddr{next.data_addr, next.data_port})) << "slot " << slot;
  }
  EXPECT_EQ(completed.load(), 1);
  EXPECT_EQ(server.joined(), static_cast<std::size_t>(n));
}

INSTANTIATE_TEST_SUITE_P(Sizes, Joins, ::testing::Values(1, 4, 16));

TEST(Server, NeighboursAreFoundByRankAndEmptyAddressesFilledIn) {
  ServerOptions options;
  options.slots = make_slots(3);
  for (int s = 0; s < 3; ++s) options.slots[static_cast<std::size_t>(s)].rank = 2 - s;
  ServerThread server(options);
  const auto joined = join_all(server.endpoint(), 3, [](std::uint32_t slot) {
    Join j = make_join(slot);
    if (slot == 1) j.data_addr.clear();  // the server fills in the address it observed
    return j;
  });
  // Slot s has rank 2 - s: slot 0 is rank 2, whose next is rank 0 (slot 2), prev rank 1 (slot 1).
  EXPECT_EQ(joined[0].assign.rank, 2);
  EXPECT_EQ(joined[2].assign.rank, 0);
  const PeerAddr slot0{make_join(0).data_addr, make_join(0).data_port};
  const PeerAddr slot1{"127.0.0.1", make_join(1).data_port};
  const PeerAddr slot2{make_join(2).data_addr, make_join(2).data_port};
  EXPECT_EQ(joined[0].assign.prev, slot1);
  EXPECT_EQ(joined[0].assign.next, slot2);
  EXPECT_EQ(joined[1].assign.prev, slot2);
  EXPECT_EQ(joined[1].assign.next, slot0);
  EXPECT_EQ(joined[2].assign.prev, slot0);
  EXPECT_EQ(joined[2].assign.next, slot1);
}

TEST(Server, RefusesSlotTablesThatAreNotAPermutation) {
  boost::asio::io_context io;
  ServerOptions options;
  options.slots = make_slots(2);
  options.slots[1].rank = 0;
  EXPECT_THROW(Server(io, options), UsageError);
}

TEST(Server, WrongSecretIsRejectedAndOthersAreStillServed) {
  ServerOptions options;
  options.slots = make_slots(1);
  ServerThread server(options);
  try {
    Client bad(server.endpoint(), "not-the-secret", kTimeout);
    bad.join(make_join(0), kTimeout);  // the first request learns of the refusal
    FAIL() << "joined with a wrong secret";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("authentication failed"), std::string::npos) << e.what();
  }
  const auto joined = join_all(server.endpoint(), 1);
  EXPECT_EQ(joined[0].assign.size, 1);
}

// The refusal is reported even when the server resets the connection (the rest of a long Join
// unread) and a heartbeat falls due at once: the reader takes what arrived before it sends.
TEST(Server, WrongSecretIsReportedWhenTheConnectionIsReset) {
  ServerOptions options;
  options.slots = make_slots(1);
  ServerThread server(options);
  for (int attempt = 0; attempt < 20; ++attempt) {
    Client bad(server.endpoint(), "not-the-secret", kTimeout, std::chrono::milliseconds(1));
    Join join = make_join(0);
    join.host.assign(3000, 'h');
    try {
      bad.join(join, kTimeout);
      FAIL() << "joined with a wrong secret";
    } catch (const ProtocolError& e) {
      ASSERT_NE(std::string(e.what()).find("authentication failed"), std::string::npos)
          << "attempt " << attempt << ": " << e.what();
    } catch (const std::exception& e) {
      FAIL() << "attempt " << attempt << ": " << e.what();
    }
  }
}

// The handshake takes one round trip: Auth and the first request may arrive in one segment, and
// the challenge names the generation a Join is for.
TEST(Server, AuthAndJoinInOneWriteAreBothHandled) {
  ServerOptions options;
  options.slots = make_slots(1);
  ServerThread server(options);
  test::RawConn raw(server.endpoint().port);
  const Message challenge = raw.receive().value();
  ASSERT_TRUE(std::holds_alternative<Challenge>(challenge.body));
  EXPECT_EQ(challenge.generation, 0u);
  auto bytes = encode(
      Message{0, Auth{compute_mac(kSecret, "rdzv", std::get<Challenge>(challenge.body).nonce)}});
  const auto join = encode(Message{challenge.generation, make_join(0)});
  bytes.insert(bytes.end(), join.begin(), join.end());
  raw.send_bytes(bytes);
  const auto reply = raw.receive();
  ASSERT_TRUE(reply);
  ASSERT_TRUE(std::holds_alternative<Assign>(reply->body)) << type_name(type_of(reply->body));
  EXPECT_EQ(std::get<Assign>(reply->body).rank, 0);
}

TEST(Server, TheChallengeCarriesTheCurrentGeneration) {
  ServerOptions options;
  options.slots = make_slots(1);
  ServerThread server(options);
  server.start_generation(make_slots(1));
  test::RawConn raw(server.endpoint().port);
  EXPECT_EQ(raw.authenticate(kSecret).generation, 1u);
  raw.send(Message{1, make_join(0)});
  const auto reply = raw.receive();
  ASSERT_TRUE(reply);
  ASSERT_TRUE(std::holds_alternative<Assign>(reply->body)) << type_name(type_of(reply->body));
}

TEST(Server, DuplicateSlotNamesTheSlotAndBothPids) {
  ServerOptions options;
  options.slots = make_slots(2);
  ServerThread server(options);
  std::thread first([&] {
    Client c(server.endpoint(), kSecret, kTimeout);
    EXPECT_EQ(c.join(make_join(0), kTimeout).assign.rank, 0);
  });
  EXPECT_TRUE(
      hvdrun::test::wait_until([&] { return server.joined() != 0; }, std::chrono::seconds(30)))
      << "a worker joined";
  Client dup(server.endpoint(), kSecret, kTimeout);
  Join j = make_join(0);
  j.pid = 777;
  try {
    dup.join(j, kTimeout);
    FAIL() << "duplicate slot accepted";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("slot 0 already joined by pid 1000"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("refused pid 777"), std::string::npos) << e.what();
  }
  EXPECT_THROW(dup.get("k", kTimeout), NetworkError);  // the refused connection is closed
  Client second(server.endpoint(), kSecret, kTimeout);
  EXPECT_EQ(second.join(make_join(1), kTimeout).assign.rank, 1);
  first.join();
}

TEST(Server, SlotOutOfRangeNamesSlotAndCount) {
  ServerOptions options;
  options.slots = make_slots(2);
  ServerThread server(options);
  Client c(server.endpoint(), kSecret, kTimeout);
  try {
    c.join(make_join(9), kTimeout);
    FAIL() << "slot 9 accepted";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("slot 9 out of range: the job has 2 slots"),
              std::string::npos)
        << e.what();
  }
}

TEST(Server, StartTimeoutNamesTheMissingRankAndCallsOnError) {
  ServerOptions options;
  options.slots = make_slots(3);
  options.start_timeout = std::chrono::milliseconds(100);
  std::promise<JobError> reported;
  ServerThread server(options, ServerCallbacks{[&](const JobError& e) { reported.set_value(e); },
                                               nullptr, nullptr, nullptr});
  const std::string expected =
      "start timeout after 100 ms: 2/3 ranks joined; missing: rank 1 (host host0)";
  std::vector<std::thread> threads;
  for (std::uint32_t slot : {0u, 2u}) {
    threads.emplace_back([&, slot] {
      Client c(server.endpoint(), kSecret, kTimeout);
      const auto start = std::chrono::steady_clock::now();
      try {
        c.join(make_join(slot), kTimeout);
        ADD_FAILURE() << "join completed without slot 1";
      } catch (const TimeoutError& e) {
        EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
      }
      EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
    });
  }
  for (auto& t : threads) t.join();
  auto future = reported.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  const auto error = future.get();
  EXPECT_EQ(error.code, ErrorCode::kTimeout);
  EXPECT_EQ(error.message, expected);
}

TEST(Server, StartTimeoutListsTenMissingRanksThenACount) {
  ServerOptions options;
  options.slots = make_slots(15);
  options.start_timeout = std::chrono::milliseconds(100);
  std::promise<JobError> reported;
  ServerThread server(options, ServerCallbacks{[&](const JobError& e) { reported.set_value(e); },
                                               nullptr, nullptr, nullptr});
  Client c(server.endpoint(), kSecret, kTimeout);
  EXPECT_THROW(c.join(make_join(3), kTimeout), TimeoutError);
  const auto text = reported.get_future().get().message;
  EXPECT_NE(text.find("1/15 ranks joined; missing: rank 0 (host host0), rank 1 (host host0), "
                      "rank 2 (host host0), rank 4 (host host0)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("rank 10 (host host0) and 4 more"), std::string::npos) << text;
}

TEST(Server, ThousandJoinsComplete) {
  constexpr int kN = 1000;
  ServerOptions options;
  options.slots = make_slots(kN, 8);
  std::atomic<int> completed{0};
  // Info level shows the server's own figure: "generation 0 complete: 1000 ranks joined in N ms".
  auto log = spdlog::get("rdzv");
  if (log) log->set_level(spdlog::level::info);
  ServerThread server(options, ServerCallbacks{nullptr, [&] { ++completed; }, nullptr, nullptr});
  const auto joined = join_all(server.endpoint(), kN);
  if (log) log->set_level(spdlog::level::warn);
  EXPECT_EQ(completed.load(), 1);
  for (int slot = 0; slot < kN; ++slot) {
    const auto& a = joined[static_cast<std::size_t>(slot)].assign;
    ASSERT_EQ(a.rank, slot);
    ASSERT_EQ(a.local_rank, slot % 8);
    ASSERT_EQ(a.cross_rank, slot / 8);
    const Join next = make_join(static_cast<std::uint32_t>((slot + 1) % kN));
    ASSERT_EQ(a.next, (PeerAddr{next.data_addr, next.data_port}));
  }
}

}  // namespace
}  // namespace hvdrun::rdzv
