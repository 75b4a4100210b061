// CollectiveProgress: what the heartbeats say of a worker's collectives.
#include "worker-runtime/collective_progress.h"

#include <gtest/gtest.h>

#include <thread>

#include "rendezvous/collective_names.h"

namespace hvdrun {
namespace {

TEST(CollectiveProgress, SaysNothingBeforeTheFirstCollective) {
  CollectiveProgress progress;
  EXPECT_FALSE(progress.report().has_value());
  EXPECT_TRUE(progress.take_samples().empty());
}

TEST(CollectiveProgress, ReportsTheCollectiveItIsInAndTheLastOneDone) {
  CollectiveProgress progress;
  { ProgressScope one(progress, tcp::CollectiveKind::kAllreduce, DataType::kFloat32, 4096); }
  ProgressScope two(progress, tcp::CollectiveKind::kBroadcast, DataType::kInt64, 3u << 20);
  const auto report = progress.report();
  ASSERT_TRUE(report.has_value());
  EXPECT_EQ(report->entered, 2u);
  EXPECT_EQ(report->finished, 1u);
  EXPECT_TRUE(report->waiting());
  EXPECT_EQ(report->what, "broadcast (int64, 3.0 MiB)");
}

TEST(CollectiveProgress, EveryEighthCollectiveIsTimedAndTakenOnce) {
  CollectiveProgress progress;
  for (int i = 1; i <= 20; ++i) {
    ProgressScope scope(progress, tcp::CollectiveKind::kAllreduce, DataType::kFloat32, 4);
    if (i == 16) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const auto samples = progress.take_samples();
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].sequence, 8u);
  EXPECT_EQ(samples[1].sequence, 16u);
  EXPECT_GE(samples[1].inside_us, 5000u);
  EXPECT_GE(samples[0].ago_us, samples[1].ago_us);  // #8 came first
  EXPECT_GE(samples[1].ago_us, samples[1].inside_us);
  EXPECT_EQ(samples[0].what, rdzv::pack_collective(1, 0, 4));  // allreduce, float32, 4 B
  EXPECT_TRUE(progress.take_samples().empty());
  progress.reset();  // a new generation numbers from 1 again, and its samples are new
  for (int i = 1; i <= 8; ++i) {
    ProgressScope scope(progress, tcp::CollectiveKind::kBarrier, DataType::kUInt8, 0);
  }
  const auto again = progress.take_samples();
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].sequence, 8u);
}

// With the collectives in the launcher's timeline, every one is timed; a heartbeat takes at
// most rdzv::kMaxProgressSamples, the oldest, and the next one the rest.
TEST(CollectiveProgress, EveryCollectiveIsTimedForTheTimeline) {
  CollectiveProgress progress;
  progress.time_every_collective();
  const std::uint32_t count = rdzv::kMaxProgressSamples + 10;
  for (std::uint32_t i = 1; i <= count; ++i) {
    ProgressScope scope(progress, tcp::CollectiveKind::kBroadcast, DataType::kInt64, 8 * i);
  }
  const auto first = progress.take_samples();
  ASSERT_EQ(first.size(), rdzv::kMaxProgressSamples);
  EXPECT_EQ(first.front().sequence, 1u);
  EXPECT_EQ(first.back().sequence, rdzv::kMaxProgressSamples);
  EXPECT_EQ(rdzv::describe_collective(first[2].what), "broadcast (int64, 24 B)");
  const auto rest = progress.take_samples();
  ASSERT_EQ(rest.size(), 10u);
  EXPECT_EQ(rest.back().sequence, count);
}

// A collective thread that laps the ring before the heartbeat comes loses the oldest ones: the
// launcher sees the gap in the numbers.
TEST(CollectiveProgress, ARingLappedBeforeTheHeartbeatKeepsTheNewest) {
  CollectiveProgress progress;
  progress.time_every_collective();
  const std::uint32_t count = CollectiveProgress::kSampleSlots + 100;
  for (std::uint32_t i = 1; i <= count; ++i) {
    ProgressScope scope(progress, tcp::CollectiveKind::kAllreduce, DataType::kFloat32, 4);
  }
  const auto first = progress.take_samples();
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first.front().sequence, 101u);
  std::uint32_t last = 0;
  for (auto rest = first; !rest.empty(); rest = progress.take_samples()) last = rest.back().sequence;
  EXPECT_EQ(last, count);
}

}  // namespace
}  // namespace hvdrun
