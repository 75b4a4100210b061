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
  EXPECT_EQ(m.next_cooldown_end(now), now + seconds(10));
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

}  // namespace
}  // namespace hvdrun::launcher
