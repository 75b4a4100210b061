// Integration: hang forensics of libhvdrun jobs. A rank that sleeps before an allreduce while
// the others wait in it is named, with its last collective, within the stall timeout plus a
// heartbeat and the check's second; --stall-shutdown ends the job naming it.
#include <gtest/gtest.h>

#include <string>

#include "tests/integration/hvdrun_runner.h"

namespace hvdrun::itest {
namespace {

using std::chrono::seconds;

TEST(Stall, TheRankAStalledAllreduceWaitsForIsNamedAndTheJobGoesOn) {
  auto r = run_hvdrun({"--stall-timeout", "1", "-np", "3", STALL_WORKER, "5", "1", "3", "4"}, {},
                      seconds(60));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: warning: stall: allreduce #3 (float32, 4.0 KiB) waits "))
      << r.err;
  EXPECT_TRUE(contains(r.err, " on 2 of 3 ranks; rank 1 (host localhost, pid ")) << r.err;
  EXPECT_TRUE(contains(r.err, ") has not entered it: its last collective, #2, ended ")) << r.err;
  // Said once per stall, though it lasts several checks.
  EXPECT_EQ(r.err.find("stall:"), r.err.rfind("stall:")) << r.err;
  EXPECT_TRUE(contains(r.out, "[0]<stdout>:rank 0 done")) << r.out;
}

TEST(Stall, StallShutdownEndsTheJobNamingTheRank) {
  auto r = run_hvdrun(
      {"--stall-timeout", "1", "--stall-shutdown", "2", "-np", "2", STALL_WORKER, "5", "0", "2",
       "30"},
      {}, seconds(60));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: job failed: stalled: allreduce #2 (float32, 4.0 KiB) "
                              "waits "))
      << r.err;
  EXPECT_TRUE(contains(r.err, " on 1 of 2 ranks; rank 0 (host localhost, pid ")) << r.err;
  EXPECT_TRUE(contains(r.err, "(--stall-shutdown 2 s)")) << r.err;
  EXPECT_LT(r.seconds, 20.0) << r.err;
}

// A pause shorter than the timeout is no stall.
TEST(Stall, APauseShorterThanTheTimeoutIsNotReported) {
  auto r = run_hvdrun({"--stall-timeout", "3", "-np", "2", STALL_WORKER, "50", "0", "10", "1"},
                      {}, seconds(60));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(contains(r.err, "stall")) << r.err;
}

}  // namespace
}  // namespace hvdrun::itest
