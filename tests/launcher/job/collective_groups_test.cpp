// CollectiveGroups: the members' timed collectives, by collective, with wait and transfer.
#include "launcher/job/collective_groups.h"

#include <gtest/gtest.h>

namespace hvdrun::launcher {
namespace {

rdzv::TimedCollective timed(std::uint32_t worker, std::uint32_t generation, std::uint32_t seq,
                            std::uint32_t us) {
  rdzv::TimedCollective t;
  t.worker = worker;
  t.rank = static_cast<int>(worker);
  t.generation = generation;
  t.sequence = seq;
  t.inside_us = us;
  return t;
}

TEST(CollectiveGroups, ACollectiveIsCompleteOnceEveryMemberTimedIt) {
  CollectiveGroups groups;
  EXPECT_TRUE(groups.add({timed(0, 1, 1, 900), timed(1, 1, 1, 400)}, 1, 3).empty());
  EXPECT_EQ(groups.pending(), 1u);
  const auto out = groups.add({timed(2, 1, 1, 1000), timed(0, 1, 2, 5)}, 1, 3);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].complete);
  ASSERT_EQ(out[0].members.size(), 3u);
  // Rank 1 came last: it waited for nobody; the others waited for it.
  EXPECT_EQ(out[0].transfer_us(), 400u);
  EXPECT_EQ(out[0].wait_us(out[0].members[0]), 500u);
  EXPECT_EQ(out[0].wait_us(out[0].members[1]), 0u);
  EXPECT_EQ(out[0].wait_us(out[0].members[2]), 600u);
  EXPECT_EQ(groups.pending(), 1u);  // #2 waits for two members
}

TEST(CollectiveGroups, TheSameNumberInAnotherGenerationIsAnotherCollective) {
  CollectiveGroups groups;
  EXPECT_TRUE(groups.add({timed(0, 1, 7, 10)}, 1, 2).empty());
  EXPECT_TRUE(groups.add({timed(1, 2, 7, 10)}, 2, 2).empty());
  EXPECT_EQ(groups.pending(), 2u);
}

// A late sample of an earlier generation completes with that generation's size, not the
// current one's; a worker's second sample of a collective counts once.
TEST(CollectiveGroups, EachGenerationKeepsItsSizeAndAWorkerCountsOnce) {
  CollectiveGroups groups;
  EXPECT_TRUE(groups.add({timed(0, 1, 3, 10), timed(0, 1, 3, 10)}, 1, 2).empty());
  EXPECT_TRUE(groups.add({}, 2, 4).empty());  // generation 2 of 4 members
  const auto out = groups.add({timed(1, 1, 3, 10)}, 2, 4);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].complete);
  EXPECT_EQ(out[0].members.size(), 2u);
  EXPECT_TRUE(groups.add({timed(5, 9, 1, 10)}, 2, 4).empty());  // generation 9: never seen
  EXPECT_EQ(groups.pending(), 0u);
}

TEST(CollectiveGroups, ARankOfItsOwnIsCompleteAtOnce) {
  CollectiveGroups groups;
  const auto out = groups.add({timed(0, 1, 1, 10)}, 1, 1);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].complete);
  EXPECT_EQ(out[0].wait_us(out[0].members[0]), 0u);
}

TEST(CollectiveGroups, PastTheBoundTheOldestAreGivenUpIncomplete) {
  CollectiveGroups groups;
  std::vector<rdzv::TimedCollective> samples;
  for (std::uint32_t seq = 1; seq <= CollectiveGroups::kMaxPending + 5; ++seq) {
    samples.push_back(timed(0, 1, seq, 1));
  }
  const auto out = groups.add(samples, 1, 2);
  ASSERT_EQ(out.size(), 5u);
  EXPECT_FALSE(out[0].complete);
  EXPECT_EQ(out[0].members[0].sequence, 1u);
  EXPECT_EQ(groups.pending(), CollectiveGroups::kMaxPending);
  const auto rest = groups.flush();
  EXPECT_EQ(rest.size(), CollectiveGroups::kMaxPending);
  EXPECT_EQ(groups.pending(), 0u);
}

}  // namespace
}  // namespace hvdrun::launcher
