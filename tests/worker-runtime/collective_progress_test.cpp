// CollectiveProgress: what the heartbeats say of a worker's collectives.
#include "worker-runtime/collective_progress.h"

#include <gtest/gtest.h>

#include <thread>

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
  EXPECT_EQ(samples[0] >> 32, 8u);
  EXPECT_EQ(samples[1] >> 32, 16u);
  EXPECT_GE(samples[1] & 0xFFFF'FFFFu, 5000u);  // microseconds inside
  EXPECT_TRUE(progress.take_samples().empty());
  progress.reset();  // a new generation numbers from 1 again, and its samples are new
  for (int i = 1; i <= 8; ++i) {
    ProgressScope scope(progress, tcp::CollectiveKind::kBarrier, DataType::kUInt8, 0);
  }
  const auto again = progress.take_samples();
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0] >> 32, 8u);
}

}  // namespace
}  // namespace hvdrun
