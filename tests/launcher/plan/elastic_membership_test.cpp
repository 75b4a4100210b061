// ElasticMembership: who is in the next generation and with which ranks, where replacements
// go, host cooldowns and host lists changing under a running job.
#include "launcher/plan/elastic_membership.h"

#include <gtest/gtest.h>

namespace hvdrun::launcher {
namespace {

using Clock = ElasticMembership::Clock;
using std::chrono::seconds;

std::vector<HostSpec> hosts(std::initializer_list<std::pair<const char*, int>> list) {
  std::vector<HostSpec> out;
  for (const auto& [name, slots] : list) out.push_back(HostSpec{"", name, slots, "-H"});
  return out;
}

// Two workers on a (slots 0, 1), one on b, ranks 0..2 by key.
ElasticMembership three_workers(int max_np) {
  ElasticMembership m(hosts({{"a", 2}, {"b", 2}}), max_np, seconds(10), seconds(40));
  m.add({0, 0, 0}, 0, 0);
  m.add({0, 1, 0}, 1, 1);
  m.add({1, 0, 0}, 2, 2);
  return m;
}

TEST(ElasticMembership, SurvivorsKeepTheirOrderAndTheOldestBecomesRankZero) {
  auto m = three_workers(3);
  ASSERT_TRUE(m.remove(0));  // rank 0 died
  EXPECT_FALSE(m.remove(0));
  const auto members = m.next_generation();
  ASSERT_EQ(members.size(), 2u);
  EXPECT_EQ(members[0].worker, 1u);
  EXPECT_EQ(members[1].worker, 2u);
  EXPECT_EQ(members[0].slot.rank, 0);
  EXPECT_EQ(members[1].slot.rank, 1);
  EXPECT_EQ(members[1].slot.host, "b");
  EXPECT_EQ(members[1].slot.local_rank, 0);
  EXPECT_EQ(members[1].slot.cross_rank, 1);  // host b comes after a at local rank 0
  EXPECT_EQ(members[1].slot.cross_size, 2);
  EXPECT_EQ(members[1].slot.node_rank, 1);
  EXPECT_EQ(members[1].slot.node_count, 2);
}

// torchrun's GROUP_RANK and GROUP_WORLD_SIZE count the hosts with a rank now, not every host
// the job has known.
TEST(ElasticMembership, NodeRanksCountOnlyTheHostsOfTheGeneration) {
  auto m = three_workers(3);
  ASSERT_TRUE(m.remove(0));
  ASSERT_TRUE(m.remove(1));  // host a has no worker left
  const auto members = m.next_generation();
  ASSERT_EQ(members.size(), 1u);
  EXPECT_EQ(members[0].slot.host, "b");
  EXPECT_EQ(members[0].slot.host_index, 1u);
  EXPECT_EQ(members[0].slot.node_rank, 0);
  EXPECT_EQ(members[0].slot.node_count, 1);
}

TEST(ElasticMembership, ReplacementsFillFreeSlotsUpToMaxNpAndComeAfterTheSurvivors) {
  auto m = three_workers(4);
  const auto now = Clock::now();
  EXPECT_EQ(m.free_slots(now), 1u);
  const auto added = m.fill(now);
  ASSERT_EQ(added.size(), 1u);
  EXPECT_EQ(added[0].id, (WorkerId{1, 1, 0}));
  EXPECT_EQ(added[0].key, 3u);
  EXPECT_EQ(m.free_slots(now), 0u);
  const auto members = m.next_generation();
  ASSERT_EQ(members.size(), 4u);
  EXPECT_EQ(members[3].worker, 3u);
  EXPECT_EQ(members[3].slot.local_rank, 1);
  EXPECT_EQ(members[3].slot.local_size, 2);
}

TEST(ElasticMembership, AFillWithALimitStopsThere) {
  auto m = three_workers(4);
  const auto now = Clock::now();
  m.remove(0);
  m.remove(1);
  EXPECT_TRUE(m.fill(now, 1).empty());  // one live already
  const auto added = m.fill(now, 2);
  ASSERT_EQ(added.size(), 1u);
  EXPECT_EQ(m.live(), 2u);
  EXPECT_EQ(m.fill(now, 99).size(), 2u);  // max_np 4 still bounds it
  EXPECT_EQ(m.live(), 4u);
}

TEST(ElasticMembership, AFailedHostCoolsDownLongerAfterEachFailure) {
  auto m = three_workers(4);
  const auto now = Clock::now();
  m.remove(2);
  EXPECT_EQ(m.cool_down(1, now), seconds(10));
  EXPECT_EQ(m.free_slots(now), 0u);  // a is full, b cools down
  EXPECT_EQ(m.next_cooldown_end(), now + seconds(10));
  const auto later = now + seconds(10);
  EXPECT_EQ(m.free_slots(later), 2u);
  const auto again = m.fill(later);
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0].id, (WorkerId{1, 0, 1}));  // the slot's second incarnation
  m.remove(again[0].key);
  EXPECT_EQ(m.cool_down(1, later), seconds(20));
  EXPECT_EQ(m.cool_down(1, later), seconds(40));
  EXPECT_EQ(m.cool_down(1, later), seconds(40));  // MAX
}

// Two hosts cool down a moment apart; the job takes the first end at a time before the second.
// The second end, past by the time the job looks again, is still the next one to take: a
// host whose cooldown ended while the job re-formed for another is not forgotten.
TEST(ElasticMembership, ACooldownEndIsPendingUntilTakenEvenOnceItIsPast) {
  ElasticMembership m(hosts({{"a", 1}, {"b", 1}, {"c", 1}}), 3, seconds(3), seconds(3));
  const auto now = Clock::now();
  m.add(WorkerId{0, 0, 0}, 1, 0);
  m.cool_down(1, now);
  m.cool_down(2, now + std::chrono::milliseconds(5));
  EXPECT_EQ(m.next_cooldown_end(), now + seconds(3));
  EXPECT_EQ(m.end_cooldowns(now + seconds(3)), 1u);  // b's only
  const auto much_later = now + seconds(30);
  EXPECT_EQ(m.next_cooldown_end(), now + std::chrono::milliseconds(5) + seconds(3));
  EXPECT_EQ(m.end_cooldowns(much_later), 1u);
  EXPECT_EQ(m.next_cooldown_end(), std::nullopt);
  EXPECT_EQ(m.end_cooldowns(much_later), 0u);
}

TEST(ElasticMembership, ANewHostListAddsHostsAndRemovesTheWorkersOfGoneSlots) {
  auto m = three_workers(8);
  const auto now = Clock::now();
  auto change = m.update_hosts(hosts({{"b", 2}, {"c", 3}, {"a", 1}}));
  ASSERT_EQ(change.added.size(), 1u);
  EXPECT_EQ(change.added[0], 2u);
  EXPECT_EQ(m.host_name(2), "c");
  ASSERT_EQ(change.removed.size(), 1u);  // a lost its slot 1
  EXPECT_EQ(change.removed[0].key, 1u);
  EXPECT_EQ(m.live(), 2u);
  EXPECT_EQ(m.free_slots(now), 4u);  // b:1 and c:3
  m.set_reachable(2, false);         // c still connecting
  EXPECT_EQ(m.free_slots(now), 1u);
  change = m.update_hosts(hosts({{"c", 3}}));  // a and b gone
  EXPECT_TRUE(change.added.empty());
  EXPECT_EQ(change.removed.size(), 2u);
  EXPECT_EQ(m.live(), 0u);
  m.set_reachable(2, true);
  EXPECT_EQ(m.free_slots(now), 3u);
  const auto members_before = m.fill(now);
  EXPECT_EQ(members_before.size(), 3u);
  EXPECT_EQ(m.next_generation().front().slot.host, "c");
}

TEST(ElasticMembership, AHostThatLeavesAndComesBackKeepsItsCooldown) {
  auto m = three_workers(4);
  const auto now = Clock::now();
  m.remove(2);
  m.cool_down(1, now);
  m.update_hosts(hosts({{"a", 2}}));
  m.update_hosts(hosts({{"a", 2}, {"b", 2}}));
  EXPECT_EQ(m.free_slots(now), 0u);
  EXPECT_EQ(m.free_slots(now + seconds(10)), 2u);  // b's two, after its cooldown
}

// 100,000 hosts of one slot, listed twice, then a job of 65,536 workers filled, re-formed and
// emptied: every step is O(n log n), so this ends in well under a second (a step quadratic in
// hosts or workers would take minutes, past the test's timeout).
TEST(ElasticMembership, ScalesToAHundredThousandHostsAndSixtyFiveThousandWorkers) {
  std::vector<HostSpec> hosts;
  for (int i = 0; i < 100000; ++i) hosts.push_back({"", "h" + std::to_string(i), 1, "s"});
  ElasticMembership m({}, 65536, std::chrono::seconds(10), std::chrono::seconds(300));
  const auto first = m.update_hosts(hosts);
  ASSERT_EQ(first.added.size(), 100000u);
  EXPECT_EQ(first.added_from[99999], 99999u);
  EXPECT_TRUE(m.update_hosts(hosts).added.empty());  // the same list again: nothing new
  const auto now = ElasticMembership::Clock::now();
  EXPECT_EQ(m.free_slots(now), 65536u);
  const auto added = m.fill(now);
  ASSERT_EQ(added.size(), 65536u);
  EXPECT_EQ(m.free_slots(now), 0u);
  const auto members = m.next_generation();
  ASSERT_EQ(members.size(), 65536u);
  EXPECT_EQ(members.back().slot.rank, 65535);
  for (const auto& w : added) EXPECT_TRUE(m.remove(w.key));
  EXPECT_EQ(m.live(), 0u);
  hosts.resize(10);  // 99,990 hosts leave the list
  const auto change = m.update_hosts(hosts);
  EXPECT_TRUE(change.added.empty());
  EXPECT_EQ(m.free_slots(now), 10u);
}

// Spares take the slot left beyond --max-np, and are no members until a failure promotes one:
// it is chosen before any new worker, even on a host cooling down, and the next generation
// has it as a newcomer after the survivors.
TEST(ElasticMembership, SparesWaitBeyondMaxNpAndArePromotedBeforeNewWorkers) {
  auto m = three_workers(3);  // a:0, a:1, b:0; b:1 free
  const auto now = Clock::now();
  EXPECT_EQ(m.free_slots(now), 0u);
  const auto spares = m.add_spares(now, 2);
  ASSERT_EQ(spares.size(), 1u);  // one free slot only
  EXPECT_EQ(spares[0].id.host, 1u);
  EXPECT_EQ(spares[0].id.slot, 1);
  EXPECT_EQ(spares[0].key, 3u);
  EXPECT_TRUE(m.is_spare(3));
  EXPECT_EQ(m.live(), 3u);
  EXPECT_EQ(m.next_generation().size(), 3u);  // not a member
  EXPECT_TRUE(m.add_spares(now, 2).empty());  // no other slot

  ASSERT_TRUE(m.remove(1));  // rank 1 died on a
  m.cool_down(1, now);       // b cools down: its spare is promoted all the same
  EXPECT_EQ(m.free_slots(now), 1u);
  const auto filled = m.fill(now);
  ASSERT_EQ(filled.size(), 1u);
  EXPECT_TRUE(filled[0].promoted);
  EXPECT_EQ(filled[0].key, 3u);
  EXPECT_EQ(m.spares(), 0u);
  const auto members = m.next_generation();
  ASSERT_EQ(members.size(), 3u);
  EXPECT_EQ(members[2].worker, 3u);  // the newcomer comes last
  EXPECT_EQ(members[2].slot.host, "b");
  // The slot a:1 that rank 1 left takes the next spare; b, cooling down, gets none.
  const auto next = m.add_spares(now, 1);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].id.host, 0u);
  EXPECT_EQ(next[0].id.slot, 1);
  EXPECT_EQ(next[0].id.incarnation, 1);
}

TEST(ElasticMembership, ASpareOnAnUnreachableHostIsNotPromotedAndAGoneSpareFreesItsSlot) {
  auto m = three_workers(3);
  const auto now = Clock::now();
  ASSERT_EQ(m.add_spares(now, 1).size(), 1u);  // on b:1
  m.set_reachable(1, false);
  ASSERT_TRUE(m.remove(0));
  EXPECT_EQ(m.free_slots(now), 1u);  // a:0 (the spare does not count)
  const auto filled = m.fill(now);
  ASSERT_EQ(filled.size(), 1u);
  EXPECT_FALSE(filled[0].promoted);
  EXPECT_EQ(filled[0].id.host, 0u);
  EXPECT_TRUE(m.remove(3));  // the spare died with its host
  EXPECT_FALSE(m.is_spare(3));
  EXPECT_EQ(m.spares(), 0u);
}

TEST(ElasticMembership, ASpareWhoseSlotLeavesTheHostListIsRemoved) {
  auto m = three_workers(3);
  const auto now = Clock::now();
  ASSERT_EQ(m.add_spares(now, 1).size(), 1u);  // on b:1
  const auto change = m.update_hosts(hosts({{"a", 2}, {"b", 1}}));
  EXPECT_TRUE(change.removed.empty());
  ASSERT_EQ(change.removed_spares.size(), 1u);
  EXPECT_EQ(change.removed_spares[0].key, 3u);
  EXPECT_EQ(m.spares(), 0u);
}

// Spares do not take the slots the job may still grow into up to --max-np.
TEST(ElasticMembership, SparesLeaveTheJobRoomToGrow) {
  ElasticMembership m(hosts({{"a", 4}}), 3, seconds(10), seconds(40));
  m.add({0, 0, 0}, 0, 0);
  m.add({0, 1, 0}, 1, 1);  // 2 of --max-np 3: one slot is the job's to grow into
  const auto now = Clock::now();
  const auto spares = m.add_spares(now, 2);
  ASSERT_EQ(spares.size(), 1u);  // the 4th slot only
  EXPECT_EQ(m.free_slots(now), 1u);
}

}  // namespace
}  // namespace hvdrun::launcher
