// StragglerMonitor: the straggler component fed with the job's events, a fake job behind its
// control interface and a clock of the test's own.
#include "launcher/forensics/straggler_monitor.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/launcher/job/fake_job_control.h"

namespace hvdrun::launcher {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

using test::FakeJob;

// A complete collective of three ranks in which worker 2 arrived `by` after the others.
CollectiveGroup late_two(std::uint32_t generation, milliseconds by) {
  CollectiveGroup g;
  g.complete = true;
  for (std::uint32_t w = 0; w < 3; ++w) {
    rdzv::TimedCollective t;
    t.worker = w;
    t.rank = static_cast<int>(w);
    t.host = "node" + std::to_string(w);
    t.generation = generation;
    t.inside_us = 200 + (w == 2 ? 0 : static_cast<std::uint32_t>(by.count() * 1000));
    g.members.push_back(t);
  }
  return g;
}

JobSpec excluding(milliseconds margin) {
  JobSpec spec;
  spec.elastic.exclude_stragglers = true;
  spec.elastic.straggler_margin = margin;
  return spec;
}

void feed(StragglerMonitor& monitor, std::uint32_t generation, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i)
    monitor.collectives_timed({late_two(generation, milliseconds(30))});
}

TEST(StragglerMonitor, AsksTheJobOnceAPersistentStragglerIsFoundThenStartsAgainAfterIt) {
  StragglerMonitor monitor(excluding(milliseconds(20)), Clock::now());
  FakeJob job;
  monitor.attached(job);
  feed(monitor, 1, StragglerWatch::kWindow - 1);
  EXPECT_TRUE(job.stragglers.empty()) << "before the window is full";
  feed(monitor, 1, 1);
  ASSERT_EQ(job.stragglers.size(), 1u);
  EXPECT_EQ(job.stragglers[0].first, 2u);
  EXPECT_EQ(job.stragglers[0].second,
            "rank 2 (host node2) arrived last in 24 of the last 24 collectives timed on every "
            "rank, late by 30.0 ms at the median");
  // The generation it was found in no longer counts, even late samples of it.
  feed(monitor, 1, StragglerWatch::kWindow);
  EXPECT_EQ(job.stragglers.size(), 1u);
  EXPECT_EQ(monitor.stats().rows().size(), 3u);  // the statistics keep every collective
}

TEST(StragglerMonitor, AStragglerTheJobKeepsIsAskedAboutAgain) {
  StragglerMonitor monitor(excluding(milliseconds(20)), Clock::now());
  FakeJob job;
  job.takes_stragglers = false;
  monitor.attached(job);
  feed(monitor, 1, StragglerWatch::kWindow + 2);
  EXPECT_EQ(job.stragglers.size(), 3u);  // the policy says once, and may take it later
}

TEST(StragglerMonitor, NothingIsAskedWhileNoGenerationRunsOrWithoutExcludeStragglers) {
  StragglerMonitor monitor(excluding(milliseconds(20)), Clock::now());
  FakeJob job;
  job.running = false;
  monitor.attached(job);
  feed(monitor, 1, StragglerWatch::kWindow);
  EXPECT_TRUE(job.stragglers.empty());

  StragglerMonitor reporting_only(JobSpec{}, Clock::now());
  FakeJob other;
  reporting_only.attached(other);
  feed(reporting_only, 1, StragglerWatch::kWindow);
  EXPECT_TRUE(other.stragglers.empty());
  EXPECT_FALSE(reporting_only.stats().rows().empty());
}

}  // namespace
}  // namespace hvdrun::launcher
