// HangWatch: the stall check as a component, ticked by the test with a fake job behind its
// control interface whose members' progress the test sets.
#include "launcher/forensics/hang_watch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/launcher/job/fake_job_control.h"

namespace hvdrun::launcher {
namespace {

using std::chrono::milliseconds;
using test::FakeJob;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Rank `rank` of a generation, in collective `seq` for `waited_ms`, or through `seq` a while
// ago.
rdzv::MemberProgress in(int rank, std::uint32_t seq, std::uint32_t waited_ms) {
  rdzv::MemberProgress m;
  m.worker = static_cast<std::uint32_t>(rank);
  m.rank = rank;
  m.host = "node" + std::to_string(rank);
  m.pid = 4000 + static_cast<std::uint32_t>(rank);
  m.report = rdzv::ProgressReport{seq, seq - 1, waited_ms, waited_ms + 10, "allreduce (f32)"};
  m.age = milliseconds(200);
  return m;
}
rdzv::MemberProgress done(int rank, std::uint32_t seq, std::uint32_t ago_ms) {
  rdzv::MemberProgress m = in(rank, seq, 5);
  m.report = rdzv::ProgressReport{seq, seq, 5, ago_ms, "allreduce (f32)"};
  return m;
}

JobSpec stall_spec(milliseconds warn, std::optional<milliseconds> shutdown = std::nullopt) {
  JobSpec spec;
  spec.stall_timeout = warn;
  spec.stall_shutdown = shutdown;
  return spec;
}

// Ranks 0 and 1 wait in #8 for `ms`; rank 2 is still through #7.
std::vector<rdzv::MemberProgress> rank_two_missing(std::uint32_t ms) {
  return {in(0, 8, ms), in(1, 8, ms), done(2, 7, ms + 100)};
}

TEST(HangWatch, AStallIsSaidOnceItsRanksAreSuspectsUntilItEnds) {
  FakeJob job;
  HangWatch watch(stall_spec(milliseconds(1000)));
  watch.attached(job);
  job.members = rank_two_missing(500);
  watch.tick();
  EXPECT_TRUE(job.events.empty()) << "below --stall-timeout";
  EXPECT_FALSE(job.suspects);

  job.members = rank_two_missing(1500);
  watch.tick();
  watch.tick();
  ASSERT_EQ(job.events.size(), 1u) << "said once per collective";
  EXPECT_EQ(job.events[0].first, "stall");
  ASSERT_EQ(job.events[0].second.size(), 1u);
  EXPECT_THAT(job.events[0].second[0].second, HasSubstr("allreduce #8"));
  ASSERT_TRUE(job.suspects);
  EXPECT_THAT(*job.suspects, ElementsAre(2));
  EXPECT_TRUE(job.stacks.empty()) << "no --stall-shutdown: no stacks, the job goes on";

  job.members = {done(0, 8, 10), done(1, 8, 10), done(2, 8, 10)};
  watch.tick();
  EXPECT_FALSE(job.suspects) << "the collective completed";
  job.members = rank_two_missing(1500);
  job.current = 2;  // the same collective number in a new generation is a new stall
  watch.tick();
  EXPECT_EQ(job.events.size(), 2u);
}

TEST(HangWatch, PastTheShutdownLimitTheStacksComeFirstThenThePolicyEndsTheJob) {
  FakeJob job;
  HangWatch watch(stall_spec(milliseconds(1000), milliseconds(2000)));
  watch.attached(job);
  job.members = rank_two_missing(2500);
  watch.tick();
  ASSERT_EQ(job.stacks.size(), 1u);
  EXPECT_EQ(job.stacks[0].why, "stall");
  EXPECT_THAT(job.stacks[0].culprits, ElementsAre(2));
  EXPECT_TRUE(job.limits.empty()) << "not before the stacks came";
  watch.tick();
  EXPECT_EQ(job.stacks.size(), 1u) << "one collection while the job shuts down";
  EXPECT_FALSE(job.suspects) << "a Ctrl-\\ now shows every rank";

  job.stacks[0].then();
  ASSERT_EQ(job.limits.size(), 1u);
  EXPECT_EQ(job.limits[0].first, Limit::kStallShutdown);
  EXPECT_THAT(job.limits[0].second, HasSubstr("stalled: allreduce #8"));
  EXPECT_THAT(job.limits[0].second, HasSubstr("(--stall-shutdown 2 s)"));
}

TEST(HangWatch, AGenerationThatStoppedMeanwhileIsNotEndedAgain) {
  FakeJob job;
  HangWatch watch(stall_spec(milliseconds(0), milliseconds(1000)));
  watch.attached(job);
  job.members = rank_two_missing(1500);
  watch.tick();
  ASSERT_EQ(job.stacks.size(), 1u);
  EXPECT_TRUE(job.events.empty()) << "--stall-timeout 0: no warning, only the shutdown";
  job.running = false;  // a signal ended it while the stacks were collected
  job.stacks[0].then();
  EXPECT_TRUE(job.limits.empty());
}

TEST(HangWatch, NothingIsAskedWhileNoGenerationRunsOrWithTheCheckOff) {
  FakeJob job;
  HangWatch watch(stall_spec(milliseconds(1000)));
  watch.attached(job);
  job.members = rank_two_missing(5000);
  job.running = false;
  job.suspects = std::vector<int>{7};
  watch.tick();
  EXPECT_FALSE(job.suspects) << "the last stall's suspects are gone";
  EXPECT_TRUE(job.events.empty());

  FakeJob other;
  HangWatch off(stall_spec(milliseconds(0)));
  off.attached(other);
  other.members = rank_two_missing(5000);
  other.suspects = std::vector<int>{7};
  off.tick();
  EXPECT_TRUE(other.suspects) << "an unused check asks nothing of the job";
  EXPECT_TRUE(other.events.empty());
  EXPECT_TRUE(other.stacks.empty());
}

}  // namespace
}  // namespace hvdrun::launcher
