// Warm spares at the rendezvous: a spare's Join is held in no generation (the generation forms
// without it), a generation that has it as a member takes the held Join in and answers it with
// its Assign, a dismissed spare is told it is not needed (NotMemberError, also when its Join
// comes after), a second Join under a waiting spare's key is refused, a key never named a
// spare is not held, and a spare's connection that closes leaves nothing held.
#include <gtest/gtest.h>

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

void wait_parked(ServerThread& server, std::size_t n) {
  hvdrun::test::wait_until([&] { return server.parked_spares() == n; }, std::chrono::seconds(5));
  ASSERT_EQ(server.parked_spares(), n);
}

TEST(Spares, AParkedSpareIsPromotedIntoTheGenerationThatHasIt) {
  ServerThread server(slot_options(2));
  server.add_spare(7);
  Client spare(server.endpoint(), kSecret, kTimeout);
  auto assigned = std::async(std::launch::async, [&] { return spare.join(make_join(7), 60s); });
  wait_parked(server, 1);
  auto clients = join_workers(server, 2);  // generation 0 formed without the spare
  EXPECT_EQ(assigned.wait_for(200ms), std::future_status::timeout);

  // Worker 1 died: worker 0 and the spare form generation 1, the spare as rank 1.
  const auto slots = make_slots(2);
  server.start_generation({Member{0, slots[0]}, Member{7, slots[1]}}, Handover::kBroken,
                          "rank 1 was killed");
  EXPECT_EQ(server.parked_spares(), 0u);
  std::thread survivor([&] { clients[0]->rejoin(make_join(0), kTimeout, kTimeout); });
  ASSERT_EQ(assigned.wait_for(10s), std::future_status::ready);
  const Assignment a = assigned.get();
  survivor.join();
  EXPECT_EQ(a.generation, 1u);
  EXPECT_EQ(a.assign.rank, 1);
  EXPECT_EQ(a.assign.size, 2);
  // The promoted spare uses the generation like any member.
  spare.set("from-spare", "v", kTimeout);
  EXPECT_EQ(clients[0]->get("from-spare", kTimeout), "v");
}

TEST(Spares, AParkedSpareIsReportedOnceItWaits) {
  std::atomic<int> reports{0};
  std::atomic<std::uint32_t> reported{0};
  ServerCallbacks callbacks;
  callbacks.on_spare_parked = [&](std::uint32_t spare) {
    reported = spare;
    ++reports;
  };
  ServerThread server(slot_options(1), std::move(callbacks));
  server.add_spare(7);
  Client spare(server.endpoint(), kSecret, kTimeout);
  auto assigned = std::async(std::launch::async, [&] { return spare.join(make_join(7), 60s); });
  wait_parked(server, 1);
  hvdrun::test::wait_until([&] { return reports.load() == 1; }, std::chrono::seconds(5));
  EXPECT_EQ(reports.load(), 1);
  EXPECT_EQ(reported.load(), 7u);
  server.dismiss_spare(7, "not needed");
  ASSERT_EQ(assigned.wait_for(10s), std::future_status::ready);
  EXPECT_THROW(assigned.get(), NotMemberError);
}

TEST(Spares, ADismissedSpareIsToldItIsNotNeeded) {
  ServerThread server(slot_options(1));
  server.add_spare(3);
  Client spare(server.endpoint(), kSecret, kTimeout);
  auto assigned = std::async(std::launch::async, [&] { return spare.join(make_join(3), 60s); });
  wait_parked(server, 1);
  server.dismiss_spare(3, "spare not needed: the job is ending");
  ASSERT_EQ(assigned.wait_for(10s), std::future_status::ready);
  try {
    assigned.get();
    FAIL() << "a dismissed spare was assigned";
  } catch (const NotMemberError& e) {
    EXPECT_NE(std::string(e.what()).find("spare not needed: the job is ending"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(server.parked_spares(), 0u);
  // A spare dismissed before it joined is told so when its Join comes.
  server.add_spare(8);
  server.dismiss_spare(8, "spare not needed: the job is ending");
  Client late(server.endpoint(), kSecret, kTimeout);
  EXPECT_THROW(late.join(make_join(8), 5s), NotMemberError);
}

TEST(Spares, ASecondJoinUnderAWaitingSparesKeyIsRefused) {
  ServerThread server(slot_options(1));
  server.add_spare(4);
  Client spare(server.endpoint(), kSecret, kTimeout);
  auto assigned = std::async(std::launch::async, [&] { return spare.join(make_join(4), 60s); });
  wait_parked(server, 1);
  Client twin(server.endpoint(), kSecret, kTimeout);
  EXPECT_THROW(twin.join(make_join(4), 5s), Error);
  EXPECT_EQ(server.parked_spares(), 1u);  // the first still waits
  server.dismiss_spare(4, "done");
  EXPECT_THROW(assigned.get(), NotMemberError);
}

TEST(Spares, AKeyNeverNamedASpareIsNoMember) {
  ServerThread server(slot_options(1));
  auto clients = join_workers(server, 1);
  Client stranger(server.endpoint(), kSecret, kTimeout);
  EXPECT_THROW(stranger.join(make_join(9), 5s), Error);
  EXPECT_EQ(server.parked_spares(), 0u);
}

TEST(Spares, ASpareThatDisconnectsIsNoLongerHeld) {
  ServerThread server(slot_options(1));
  server.add_spare(5);
  {
    Client spare(server.endpoint(), kSecret, kTimeout);
    std::thread joiner([&] {
      try {
        spare.join(make_join(5), 2s);
      } catch (const Error&) {  // its wait ran out; the client goes below
      }
    });
    wait_parked(server, 1);
    joiner.join();
  }
  hvdrun::test::wait_until([&] { return server.parked_spares() == 0; }, std::chrono::seconds(5));
  EXPECT_EQ(server.parked_spares(), 0u);
}

// A promoted spare is a worker like any: a later generation that leaves it out tells it so.
TEST(Spares, APromotedSpareLeftOutLaterIsNoLongerHeldAsASpare) {
  ServerThread server(slot_options(1));
  server.add_spare(7);
  auto clients = join_workers(server, 1);
  Client spare(server.endpoint(), kSecret, kTimeout);
  auto assigned = std::async(std::launch::async, [&] { return spare.join(make_join(7), 60s); });
  wait_parked(server, 1);
  const auto slots = make_slots(2);
  server.start_generation({Member{0, slots[0]}, Member{7, slots[1]}}, Handover::kBroken, "grow");
  std::thread survivor([&] { clients[0]->rejoin(make_join(0), kTimeout, kTimeout); });
  ASSERT_EQ(assigned.wait_for(10s), std::future_status::ready);
  assigned.get();
  survivor.join();
  // Generation 2 has worker 0 alone: the promoted spare re-joins and is told it is no member.
  server.start_generation({Member{0, make_slots(1)[0]}}, Handover::kBroken, "shrink");
  std::thread again([&] { clients[0]->rejoin(make_join(0), kTimeout, kTimeout); });
  hvdrun::test::wait_until([&] { return spare.generation_end(); }, std::chrono::seconds(5));
  EXPECT_THROW(spare.rejoin(make_join(7), 5s, 5s), NotMemberError);
  again.join();
  EXPECT_EQ(server.parked_spares(), 0u);
}

}  // namespace
}  // namespace hvdrun::rdzv
