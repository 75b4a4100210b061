// Integration: hang forensics of libhvdrun jobs. A rank that sleeps before an allreduce while
// the others wait in it is named, with its last collective, within the stall timeout plus a
// heartbeat and the check's second; --stall-shutdown ends the job naming it.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <string>
#include <thread>

#include "tests/integration/elastic_jobs.h"
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
  auto r = run_hvdrun({"--stall-timeout", "1", "--stall-shutdown", "2", "-np", "2", STALL_WORKER,
                       "5", "0", "2", "30"},
                      {}, seconds(60));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "hvdrun: job failed: stalled: allreduce #2 (float32, 4.0 KiB) "
                       "waits "))
      << r.err;
  EXPECT_TRUE(contains(r.err, " on 1 of 2 ranks; rank 0 (host localhost, pid ")) << r.err;
  EXPECT_TRUE(contains(r.err, "(--stall-shutdown 2 s)")) << r.err;
  EXPECT_LT(r.seconds, 20.0) << r.err;
  // Before it ends, the stack of the rank it waits for: asleep in its own main().
  EXPECT_TRUE(contains(r.err, "hvdrun: stacks of 2 ranks (stall) collected in ")) << r.err;
  const auto top = r.err.find("hvdrun: rank 0 (host localhost, pid ");
  ASSERT_NE(top, std::string::npos) << r.err;
  EXPECT_NE(r.err.find("top of its stack:", top), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" main\n", top), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("hvdrun: rank 1 (host localhost, pid "), std::string::npos)
      << "only the culprit's frames are shown\n"
      << r.err;
}

// Ctrl-\ (SIGQUIT) writes every rank's stacks to a file per rank beside the output, and the
// job goes on to its end.
TEST(Stall, SigquitWritesEveryRanksStacksAndTheJobGoesOn) {
  TempDir output;
  HvdrunProcess hvdrun(
      {"--output-filename", output.path.string(), "-np", "2", STALL_WORKER, "4", "1", "2", "4"});
  ASSERT_TRUE(hvdrun.wait_for_output("rank 1 sleeps before allreduce 2", 1));
  hvdrun.signal(SIGQUIT);
  const auto r = hvdrun.finish(seconds(60));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "[1]<stdout>:rank 1 done")) << r.out;
  EXPECT_TRUE(contains(r.err, "hvdrun: stacks of 2 ranks (SIGQUIT from pid ")) << r.err;
  for (const char* rank : {"0", "1"}) {
    std::ifstream in(output.path / "stacks" / (std::string("rank.") + rank + ".txt"));
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(contains(text, std::string("==== rank ") + rank + " (host localhost, pid "))
        << text;
    EXPECT_TRUE(contains(text, "---- native, every thread (eu-stack) ----")) << text;
    EXPECT_TRUE(contains(text, " main\n")) << text;
  }
}

// A pause shorter than the timeout is no stall.
TEST(Stall, APauseShorterThanTheTimeoutIsNotReported) {
  auto r = run_hvdrun({"--stall-timeout", "3", "-np", "2", STALL_WORKER, "50", "0", "10", "1"}, {},
                      seconds(60));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(contains(r.err, "stall")) << r.err;
}

}  // namespace
}  // namespace hvdrun::itest

namespace hvdrun::itest {
namespace {

// Rank 2 sleeps 20 ms before each allreduce: at the end of the job it is named as the rank
// that arrives last, late by about that much (collectives every rank timed: every 8th).
TEST(Stragglers, TheRankThatArrivesLastIsNamedWithItsLateness) {
  auto r = run_hvdrun({"-np", "3", STALL_WORKER, "80", "2", "1", "0.02", "every"}, {},
                      std::chrono::seconds(60));
  EXPECT_EQ(r.status, 0) << r.err;
  const auto line = r.err.find("hvdrun: stragglers, over ");
  ASSERT_NE(line, std::string::npos) << r.err;
  const std::string text = r.err.substr(line, r.err.find('\n', line) - line);
  EXPECT_TRUE(contains(text,
                       " collectives timed on every rank: rank 2 (host localhost) arrived "
                       "last in "))
      << text;
  // "late by 20.3 ms median": the first rank named is late by 15 ms or more.
  const auto late = text.find("late by ");
  ASSERT_NE(late, std::string::npos) << text;
  EXPECT_GE(std::stod(text.substr(late + 8)), 15.0) << text;
}

// Without a straggler nobody is late by a millisecond: nothing is said (without --verbose).
TEST(Stragglers, NothingIsSaidWhenNoRankIsLate) {
  auto r =
      run_hvdrun({"-np", "2", STALL_WORKER, "200", "0", "1", "0"}, {}, std::chrono::seconds(60));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(contains(r.err, "stragglers")) << r.err;
}

// A rank that stops answering (SIGSTOP) misses its heartbeats; in a static job that ends the
// job, and before it does, the ranks' stacks are collected: the stopped one's among them.
TEST(Stall, AHeartbeatTimeoutCollectsTheStacksBeforeTheJobEnds) {
  TempDir dir;
  HvdrunProcess hvdrun({"--unresponsive-timeout", "1", "-np", "2", "/bin/sh", "-c",
                        "echo $$ > " + dir.path.string() + "/$HVDRUN_SLOT.pid; exec \"$@\"", "sh",
                        STALL_WORKER, "2", "1", "2", "30"});
  const pid_t rank1 = pid_of_slot(dir, 1, 2);
  ASSERT_TRUE(hvdrun.wait_for_output("rank 1 sleeps before allreduce 2", 1));
  ASSERT_EQ(::kill(rank1, SIGSTOP), 0);
  const auto r = hvdrun.finish(seconds(60));
  EXPECT_EQ(r.status, 255) << r.err;  // as for a worker lost with its host
  EXPECT_TRUE(contains(r.err,
                       "hvdrun: job failed: first failure was rank 1 on localhost: missed "
                       "its heartbeats (no heartbeat for "))
      << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: stacks of 2 ranks (heartbeat timeout) collected in "))
      << r.err;
  const auto top = r.err.find("hvdrun: rank 1 (host localhost, pid " + std::to_string(rank1));
  ASSERT_NE(top, std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" main\n", top), std::string::npos) << r.err;
  EXPECT_LT(r.seconds, 30.0) << r.err;
  EXPECT_FALSE(alive(rank1));
}

}  // namespace
}  // namespace hvdrun::itest
