// Generations that end while their members live on: the server pushes GenerationEnd on each
// worker's connection, the workers re-join on it, a pending request of the ended generation
// ends at once, a generation that ends before it formed is followed to the next, a worker
// left out is told so, and a worker that stops sending heartbeats is reported.
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <thread>

#include "hvdrun/error.h"
#include "tests/rendezvous/test_util.h"
#include "tests/support/wait_until.h"

namespace hvdrun::rdzv {
namespace {

using namespace std::chrono_literals;
using test::join_workers;
using test::kSecret;
using test::kTimeout;
using test::make_join;
using test::make_slots;
using test::ServerThread;
using test::slot_options;

// Members with the given worker keys, ranked in that order, all on one host.
std::vector<Member> members(std::initializer_list<std::uint32_t> keys) {
  const auto slots = make_slots(static_cast<int>(keys.size()));
  std::vector<Member> out;
  for (std::uint32_t key : keys) out.push_back(Member{key, slots[out.size()]});
  return out;
}

TEST(Handover, SurvivorsAreToldAndRejoinOnTheirConnectionWithNewRanks) {
  ServerThread server(slot_options(3));
  auto clients = join_workers(server, 3);
  std::promise<GenerationEndEvent> pushed;
  clients[2]->on_generation_end([&](const GenerationEndEvent& e) { pushed.set_value(e); });
  // Worker 0 died: 2 and 1 form generation 1, worker 2 as rank 0.
  EXPECT_EQ(server.start_generation(members({2, 1}), Handover::kBroken, "rank 0 was killed"), 1u);
  auto event = pushed.get_future();
  ASSERT_EQ(event.wait_for(5s), std::future_status::ready);
  const auto end = event.get();
  EXPECT_EQ(end.ended, 0u);
  EXPECT_EQ(end.end.next, 1u);
  EXPECT_EQ(end.end.kind, EndKind::kBroken);
  EXPECT_EQ(end.end.reason, "rank 0 was killed");
  hvdrun::test::wait_until([&] { return clients[1]->generation_end(); }, std::chrono::seconds(5));
  ASSERT_TRUE(clients[1]->generation_end());

  Assignment a1, a2;
  std::thread t1([&] { a1 = clients[1]->rejoin(make_join(1), kTimeout, kTimeout); });
  a2 = clients[2]->rejoin(make_join(2), kTimeout, kTimeout);
  t1.join();
  EXPECT_EQ(a2.generation, 1u);
  EXPECT_EQ(a2.assign.rank, 0);
  EXPECT_EQ(a1.assign.rank, 1);
  EXPECT_EQ(a1.assign.size, 2);
  EXPECT_EQ(clients[1]->generation(), 1u);
  EXPECT_FALSE(clients[1]->generation_end());  // the end was of generation 0
  // The new generation's store works on the same connections.
  clients[2]->set("k", "v", kTimeout);
  EXPECT_EQ(clients[1]->get("k", kTimeout), "v");
  // Worker 0, left out, is told it is not a member.
  EXPECT_THROW(clients[0]->rejoin(make_join(0), kTimeout, kTimeout), NotMemberError);
}

TEST(Handover, APendingGetOfTheEndedGenerationEndsAtOnceAndTheConnectionLives) {
  ServerThread server(slot_options(2));
  auto clients = join_workers(server, 2);
  UniqueFd interrupt(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  clients[0]->set_interrupt(interrupt.get());
  clients[0]->on_generation_end([&](const GenerationEndEvent&) {
    const std::uint64_t one = 1;  // what the runtime does: abort the generation's waits
    EXPECT_EQ(::write(interrupt.get(), &one, sizeof one), 8);
  });
  std::thread breaker([&] {
    EXPECT_TRUE(hvdrun::test::wait_until([&] { return server.pending_gets() == 1; },
                                         std::chrono::seconds(30)))
        << "the get waits at the server";
    server.start_generation(members({0, 1}), Handover::kBroken, "a peer failed");
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(clients[0]->get("never-set", 30s), AbortedError);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  breaker.join();
  clients[0]->set_interrupt(-1);
  std::thread other([&] { clients[1]->rejoin(make_join(1), kTimeout, kTimeout); });
  EXPECT_EQ(clients[0]->rejoin(make_join(0), kTimeout, kTimeout).generation, 1u);
  other.join();
}

TEST(Handover, AGenerationThatEndsBeforeItFormedIsFollowedToTheNext) {
  ServerThread server(slot_options(3));
  auto clients = join_workers(server, 3);
  server.start_generation(members({0, 1, 2}), Handover::kBroken, "first failure");
  // Worker 0 re-joins generation 1, which cannot form: 1 and 2 are away.
  std::promise<Assignment> first;
  std::thread t0([&] { first.set_value(clients[0]->rejoin(make_join(0), kTimeout, kTimeout)); });
  EXPECT_TRUE(
      hvdrun::test::wait_until([&] { return server.joined() != 0; }, std::chrono::seconds(30)))
      << "a worker joined";
  server.start_generation(members({0, 1}), Handover::kBroken, "second failure");
  std::thread t1([&] { clients[1]->rejoin(make_join(1), kTimeout, kTimeout); });
  auto a0 = first.get_future().get();
  t0.join();
  t1.join();
  EXPECT_EQ(a0.generation, 2u);
  EXPECT_EQ(a0.assign.size, 2);
}

TEST(Handover, HostsUpdatedKeepsTheOldStoreUntilEveryMemberRejoined) {
  ServerThread server(slot_options(2));
  auto clients = join_workers(server, 2);
  clients[0]->set("before", "1", kTimeout);
  server.start_generation(members({0, 1, 7}), Handover::kHostsUpdated, "host b added");
  EXPECT_TRUE(hvdrun::test::wait_until([&] { return clients[1]->generation_end().has_value(); },
                                       std::chrono::seconds(30)))
      << "generation 0 ended for worker 1";
  EXPECT_EQ(clients[1]->generation_end()->end.kind, EndKind::kHostsUpdated);
  // Generation 0 still works for its members: store and barrier.
  EXPECT_EQ(clients[1]->get("before", kTimeout), "1");
  std::thread b([&] { clients[1]->barrier("commit", kTimeout); });
  clients[0]->barrier("commit", kTimeout);
  b.join();
  // The newcomer (worker 7) and the members form generation 1.
  std::vector<std::thread> joins;
  Assignment newcomer;
  joins.emplace_back([&] {
    Client c(server.endpoint(), kSecret, kTimeout);
    EXPECT_EQ(c.generation(), 1u);
    newcomer = c.join(make_join(7), kTimeout);
  });
  joins.emplace_back([&] { clients[1]->rejoin(make_join(1), kTimeout, kTimeout); });
  EXPECT_EQ(clients[0]->rejoin(make_join(0), kTimeout, kTimeout).assign.size, 3);
  for (auto& t : joins) t.join();
  EXPECT_EQ(newcomer.assign.rank, 2);
  EXPECT_THROW(clients[0]->get("before", 200ms), TimeoutError);  // generation 0's store is gone
}

TEST(Handover, AWorkerThatStopsSendingHeartbeatsIsReported) {
  ServerOptions options = slot_options(2);
  options.heartbeat_interval = 50ms;
  options.heartbeat_timeout = 400ms;
  std::promise<std::pair<std::uint32_t, std::string>> lost;
  std::atomic<int> reports{0};
  ServerThread server(options, ServerCallbacks{nullptr, nullptr,
                                               [&](std::uint32_t worker, const std::string& why) {
                                                 if (reports++ == 0) lost.set_value({worker, why});
                                               },
                                               nullptr});
  // Worker 0 is a real client (heartbeats every 50 ms); worker 1 joins by hand and goes silent.
  Client live(server.endpoint(), kSecret, kTimeout, 50ms);
  std::thread joiner([&] { live.join(make_join(0), kTimeout); });
  test::RawConn silent(server.endpoint().port);
  silent.authenticate(kSecret);
  silent.send(Message{0, make_join(1)});
  joiner.join();
  auto report = lost.get_future();
  ASSERT_EQ(report.wait_for(5s), std::future_status::ready);
  const auto [worker, why] = report.get();
  EXPECT_EQ(worker, 1u);
  EXPECT_NE(why.find("no heartbeat for"), std::string::npos) << why;
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(reports.load(), 1);  // the live worker is not reported, the silent one once
}

}  // namespace
}  // namespace hvdrun::rdzv
