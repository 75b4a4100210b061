// StragglerStats: lateness from the time each rank spent inside the same collectives.
#include "launcher/forensics/stragglers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hvdrun::launcher {
namespace {

rdzv::TimedCollective timed(std::uint32_t worker, std::uint32_t seq, std::uint32_t us) {
  return {worker, static_cast<int>(worker), "node" + std::to_string(worker), 0, seq, us};
}

// As the job does: the samples grouped by collective, the groups to the stats.
void feed(StragglerStats& stats, CollectiveGroups& groups,
          std::vector<rdzv::TimedCollective> samples, std::size_t size) {
  for (const auto& group : groups.add(std::move(samples), 0, size)) stats.add(group);
}

TEST(Stragglers, TheRankThatSpendsLeastTimeInsideArrivedLast) {
  StragglerStats stats;
  CollectiveGroups groups;
  std::vector<rdzv::TimedCollective> samples;
  for (std::uint32_t seq = 8; seq <= 800; seq += 8) {
    samples.push_back(timed(0, seq, 21'000));
    samples.push_back(timed(1, seq, 20'500));
    samples.push_back(timed(2, seq, 600 + seq % 3));  // 20 ms late, every time
  }
  feed(stats, groups, samples, 3);
  EXPECT_EQ(stats.complete(), 100u);
  const auto rows = stats.rows();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].rank, 2);
  EXPECT_EQ(rows[0].last, 100u);
  EXPECT_NEAR(rows[0].median_us, 20'400, 5);
  EXPECT_EQ(rows[1].rank, 1);
  EXPECT_EQ(rows[1].median_us, 500u);
  EXPECT_EQ(rows[2].median_us, 0u);
  EXPECT_THAT(stats.describe(1),
              ::testing::StartsWith("stragglers, over 100 collectives timed on every rank: rank 2 "
                                    "(host node2) arrived last in 100 (100 %), late by 20.4 ms"));
  EXPECT_THAT(stats.describe(1), ::testing::EndsWith("; the other 2 ranks were less late"));
}

TEST(Stragglers, ACollectiveCountsOnceEveryMemberTimedItEvenAcrossCalls) {
  StragglerStats stats;
  CollectiveGroups groups;
  feed(stats, groups, {timed(0, 8, 100), timed(1, 8, 50)}, 3);
  EXPECT_EQ(stats.complete(), 0u);
  EXPECT_EQ(stats.describe(3), "");
  feed(stats, groups, {timed(2, 8, 10)}, 3);
  EXPECT_EQ(stats.complete(), 1u);
  EXPECT_EQ(stats.rows().front().rank, 2);
  EXPECT_EQ(stats.rows().front().median_us, 90u);
}

TEST(Stragglers, CollectivesThatNeverCompleteAreForgotten) {
  StragglerStats stats;
  CollectiveGroups groups;
  std::vector<rdzv::TimedCollective> samples;
  for (std::uint32_t seq = 0; seq < 100'000; ++seq) samples.push_back(timed(0, seq, 1));
  feed(stats, groups, samples, 2);  // rank 1 never reports: nothing completes, nothing piles up
  EXPECT_EQ(stats.complete(), 0u);
  EXPECT_EQ(groups.pending(), CollectiveGroups::kMaxPending);
  EXPECT_TRUE(stats.rows().empty());
}

}  // namespace
}  // namespace hvdrun::launcher
