// Integration: --max-restarts. A failure stops every worker and starts them all again as a new
// generation (new rendezvous generation, new MASTER_PORT, TORCHELASTIC_RESTART_COUNT + 1) up to
// N times; the summary lists the generations; Ctrl-C and the death of hvdrun during a restart
// leave nothing behind.
#include <gtest/gtest.h>
#include <signal.h>

#include <regex>
#include <set>
#include <string>
#include <thread>

#include "tests/integration/hvdrun_runner.h"

namespace hvdrun::itest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Rank 1 of generation 0 fails at once; every rank of later generations runs hvdrun::init()
// (the rendezvous must have formed the new generation) and exits 0.
const std::string kFailOnce =
    "echo \"restart $TORCHELASTIC_RESTART_COUNT of $TORCHELASTIC_MAX_RESTARTS port $MASTER_PORT\";"
    "if [ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ] && [ \"$RANK\" = 1 ]; then exit 3; fi;"
    "exec \"$0\"";

TEST(Restart, AFailureRestartsEveryRankAsANewGenerationThatSucceeds) {
  auto r = run_hvdrun({"-np", "3", "--max-restarts", "2", "/bin/sh", "-c", kFailOnce, INIT_WORKER},
                      {}, seconds(60));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: rank 1 (host localhost, pid ")) << r.err;
  EXPECT_TRUE(contains(r.err, ") exited with code 3; restarting every rank (restart 1 of 2)"))
      << r.err;
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_TRUE(contains(r.out, "[" + std::to_string(rank) + "]<stdout>:rank " +
                                    std::to_string(rank) + " of 3 initialised"))
        << r.out;
  }
  // Generation 1 saw restart count 1 and a MASTER_PORT of its own.
  std::set<std::string> ports[2];
  const std::regex line(R"(restart (\d) of 2 port (\d+))");
  for (const auto& text : lines_of(r.out)) {
    std::smatch m;
    if (std::regex_search(text, m, line)) ports[std::stoi(m[1])].insert(m[2]);
  }
  ASSERT_EQ(ports[1].size(), 1u) << r.out;
  ASSERT_LE(ports[0].size(), 1u) << r.out;
  if (!ports[0].empty()) {
    EXPECT_NE(*ports[0].begin(), *ports[1].begin());
  }
  EXPECT_TRUE(contains(r.err, "hvdrun: generations:\n    0: 3 ranks, started ")) << r.err;
  EXPECT_TRUE(contains(r.err, ": rank 1 (host localhost, pid ")) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(\n    1: 3 ranks, started [0-9.]+ s, )"
                                                  R"(formed [0-9.]+ s, ended [0-9.]+ s: )"
                                                  R"(every rank exited 0)")))
      << r.err;
}

TEST(Restart, WhenTheRestartsAreUsedUpTheJobFailsWithTheLastFailure) {
  auto r = run_hvdrun(
      {"-np", "2", "--max-restarts", "2", "/bin/sh", "-c", "[ $RANK = 1 ] && exit 4; sleep 5"});
  EXPECT_EQ(r.status, 4) << r.err;
  EXPECT_TRUE(contains(r.err, "restarting every rank (restart 1 of 2)")) << r.err;
  EXPECT_TRUE(contains(r.err, "restarting every rank (restart 2 of 2)")) << r.err;
  EXPECT_TRUE(contains(r.err, "exited with code 4 (no restart left: --max-restarts 2 used)"))
      << r.err;
  EXPECT_TRUE(contains(r.err,
                       "hvdrun: job failed: last failure was rank 1 on localhost: exit "
                       "code 4 (no restart left: --max-restarts 2 used)\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "\n    2: 2 ranks, started ")) << r.err;
  EXPECT_LT(r.seconds, 10.0);
}

TEST(Restart, WithoutTheFlagAFailureEndsTheJob) {
  auto r = run_hvdrun({"-np", "2", "/bin/sh", "-c", "[ $RANK = 1 ] && exit 4; sleep 5"});
  EXPECT_EQ(r.status, 4) << r.err;
  EXPECT_FALSE(contains(r.err, "restarting")) << r.err;
  EXPECT_FALSE(contains(r.err, "generations:")) << r.err;
}

TEST(Restart, BadValuesAreUsageErrors) {
  for (const char* value : {"-1", "x", "1.5"}) {
    auto r = run_hvdrun({"-np", "1", "--max-restarts", value, "/bin/true"});
    EXPECT_EQ(r.status, 2) << value << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "--max-restarts")) << r.err;
  }
}

// A job that gets caught in a restart: rank 1 fails after 300 ms, and the restart waits
// (grace period 30 s) for rank 0, which ignores SIGTERM.
std::vector<std::string> restarting_job(const TempDir& pids) {
  return {"--grace-period", "30",          "--max-restarts",   "3", "-np", "2",
          worker(),         "ignore-term", pids.path.string(), "1"};
}

// The workers' pids, once rank 1 has failed and the restart waits.
std::vector<pid_t> wait_until_restarting(HvdrunProcess& hvdrun, const TempDir& pids) {
  auto workers = wait_for_pids(pids.path, 2, seconds(20));
  EXPECT_TRUE(hvdrun.wait_for_output("restarting every rank (restart 1 of 3)", 1));
  return workers;
}

// Ctrl-C twice ends the job at once.
TEST(Restart, CtrlCDuringARestartEndsTheJob) {
  TempDir pids;
  HvdrunProcess hvdrun(restarting_job(pids));
  const auto workers = wait_until_restarting(hvdrun, pids);
  ASSERT_EQ(workers.size(), 2u);
  hvdrun.signal(SIGINT);
  // Taken in; then a second one, past the window in which a repeat counts once (100 ms).
  ASSERT_TRUE(hvdrun.wait_for_output("interrupted (SIGINT), terminating", 1));
  std::this_thread::sleep_for(milliseconds(200));
  hvdrun.signal(SIGINT);
  auto r = hvdrun.finish(seconds(20));
  EXPECT_EQ(r.status, 130) << r.err;
  EXPECT_TRUE(contains(r.err, "restarting every rank (restart 1 of 3)")) << r.err;
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_TRUE(wait_until_gone(workers, milliseconds(1000)).empty());
}

// One Ctrl-C while a restart waits for its grace period ends the job when that grace period
// ends: the workers already had their SIGTERM, so it does not start again.
TEST(Restart, OneCtrlCDuringARestartKeepsItsGracePeriod) {
  TempDir pids;
  HvdrunProcess hvdrun({"--grace-period", "6", "--max-restarts", "3", "-np", "2", worker(),
                        "ignore-term", pids.path.string(), "1"});
  const auto workers = wait_for_pids(pids.path, 2, seconds(20));
  ASSERT_EQ(workers.size(), 2u);
  // The restart's grace period (6 s) runs; the Ctrl-C comes 2 s into it, or later.
  ASSERT_TRUE(hvdrun.wait_for_output("restarting every rank (restart 1 of 3)", 1));
  std::this_thread::sleep_for(seconds(2));
  const auto interrupted = std::chrono::steady_clock::now();
  hvdrun.signal(SIGINT);
  auto r = hvdrun.finish(seconds(30));
  const std::chrono::duration<double> after = std::chrono::steady_clock::now() - interrupted;
  EXPECT_EQ(r.status, 130) << r.err;
  EXPECT_TRUE(contains(r.err, "grace period of 6 s over")) << r.err;
  EXPECT_LT(after.count(), 5.5) << "the grace period started again at the Ctrl-C\n" << r.err;
  EXPECT_TRUE(wait_until_gone(workers, milliseconds(1000)).empty());
}

TEST(Restart, SigkillOfHvdrunDuringARestartLeavesNoWorker) {
  TempDir pids;
  HvdrunProcess hvdrun(restarting_job(pids));
  const auto workers = wait_until_restarting(hvdrun, pids);
  ASSERT_EQ(workers.size(), 2u);
  hvdrun.signal(SIGKILL);
  hvdrun.finish(seconds(20));
  EXPECT_TRUE(wait_until_gone(workers, seconds(2)).empty());
}

}  // namespace
}  // namespace hvdrun::itest
