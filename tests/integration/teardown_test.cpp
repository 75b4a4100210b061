// Integration: teardown of the job by signals, grace periods, launcher death and stuck pipes.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "tests/integration/hvdrun_runner.h"

namespace hvdrun::itest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(Teardown, CtrlCTerminatesEveryRankAndExits130) {
  TempDir pids;
  HvdrunProcess hvdrun({"-np", "4", worker(), "sleep", pids.path.string()});
  auto workers = wait_for_pids(pids.path, 4, seconds(20));
  ASSERT_EQ(workers.size(), 4u);
  hvdrun.signal(SIGINT);
  auto r = hvdrun.finish(seconds(20));
  EXPECT_EQ(r.status, 130) << r.err;
  EXPECT_NE(r.err.find("hvdrun: interrupted (SIGINT), terminating 4 ranks"), std::string::npos)
      << r.err;
  EXPECT_TRUE(wait_until_gone(workers, milliseconds(500)).empty());
  EXPECT_LT(r.seconds, 5.0) << "workers that honour SIGTERM must not wait for the grace period";
}

TEST(Teardown, SigtermToHvdrunExits143) {
  TempDir pids;
  HvdrunProcess hvdrun({"-np", "2", worker(), "sleep", pids.path.string()});
  auto workers = wait_for_pids(pids.path, 2, seconds(20));
  ASSERT_EQ(workers.size(), 2u);
  hvdrun.signal(SIGTERM);
  auto r = hvdrun.finish(seconds(20));
  EXPECT_EQ(r.status, 143) << r.err;
  EXPECT_TRUE(wait_until_gone(workers, milliseconds(500)).empty());
}

TEST(Teardown, WorkerIgnoringSigtermIsKilledAfterTheGracePeriod) {
  TempDir pids;
  auto r = run_hvdrun(
      {"--grace-period", "0.5", "-np", "3", worker(), "ignore-term", pids.path.string(), "2"}, {},
      seconds(30));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("SIGKILL"), std::string::npos) << r.err;
  EXPECT_GE(r.seconds, 0.8);  // 0.3 s until rank 2 fails, then the 0.5 s grace period
  EXPECT_LT(r.seconds, 10.0);
  auto workers = wait_for_pids(pids.path, 3, milliseconds(0));
  EXPECT_EQ(workers.size(), 3u);
  EXPECT_TRUE(wait_until_gone(workers, milliseconds(500)).empty());
}

TEST(Teardown, SecondCtrlCSkipsTheGracePeriod) {
  TempDir pids;
  HvdrunProcess hvdrun(
      {"--grace-period", "30", "-np", "2", worker(), "ignore-term", pids.path.string(), "99"});
  auto workers = wait_for_pids(pids.path, 2, seconds(20));
  ASSERT_EQ(workers.size(), 2u);
  hvdrun.signal(SIGINT);
  // Taken in; then a second one, past the window in which a repeat counts once (100 ms).
  ASSERT_TRUE(hvdrun.wait_for_output("interrupted (SIGINT), terminating", 1));
  std::this_thread::sleep_for(milliseconds(200));
  hvdrun.signal(SIGINT);
  auto r = hvdrun.finish(seconds(20));
  EXPECT_EQ(r.status, 130) << r.err;
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_TRUE(wait_until_gone(workers, milliseconds(500)).empty());
}

// hvdrun dies without any chance to clean up: neither a worker nor a worker's own child
// may outlive it by more than 2 s.
TEST(Teardown, SigkillOfHvdrunLeavesNoWorkerNorTheirChildren) {
  TempDir pids;
  HvdrunProcess hvdrun({"-np", "3", worker(), "sleep", pids.path.string(), "child"});
  auto workers = wait_for_pids(pids.path, 6, seconds(20));
  ASSERT_EQ(workers.size(), 6u);
  hvdrun.signal(SIGKILL);
  auto r = hvdrun.finish(seconds(10));
  EXPECT_EQ(r.status, 128 + SIGKILL);
  auto survivors = wait_until_gone(workers, seconds(2));
  EXPECT_TRUE(survivors.empty()) << survivors.size() << " processes survived hvdrun";
}

TEST(Teardown, WorkerWithClosedPipesDoesNotHangTheLauncher) {
  auto r = run_hvdrun({"--grace-period", "1", "-np", "3", worker(), "close-pipes", "1"}, {},
                      seconds(30));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_LT(r.seconds, 5.0);
  EXPECT_NE(r.err.find("first failure was rank 1"), std::string::npos) << r.err;
}

TEST(Teardown, ChildHoldingAPipeAfterItsWorkerExitedDoesNotHangTheLauncher) {
  auto r = run_hvdrun({"-np", "1", worker(), "orphan-pipe"}, {}, seconds(30));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "[0]<stdout>:parent leaving\n");
  EXPECT_LT(r.seconds, 5.0);
}

}  // namespace
}  // namespace hvdrun::itest

namespace hvdrun::itest {
namespace {

// Without HUP in --forward-signals (by default it is forwarded, signals_test.cpp).
TEST(Teardown, SighupNotForwardedIsHandledLikeSigterm) {
  TempDir pids;
  HvdrunProcess hvdrun(
      {"--forward-signals", "USR1,USR2", "-np", "2", worker(), "sleep", pids.path.string()});
  auto workers = wait_for_pids(pids.path, 2, std::chrono::seconds(20));
  ASSERT_EQ(workers.size(), 2u);
  hvdrun.signal(SIGHUP);
  auto r = hvdrun.finish(std::chrono::seconds(20));
  EXPECT_EQ(r.status, 129) << r.err;
  EXPECT_NE(r.err.find("hvdrun: interrupted (SIGHUP), terminating 2 ranks"), std::string::npos)
      << r.err;
  EXPECT_TRUE(wait_until_gone(workers, std::chrono::milliseconds(500)).empty());
}

// `hvdrun ... | head -1`: once the reader is gone, the workers get SIGPIPE and the job ends.
TEST(Teardown, ClosedStdoutReaderEndsTheJob) {
  TempDir dir;
  const auto status = dir.path / "status";
  const std::string script = "{ '" + std::string(HVDRUN_BINARY) + "' -np 2 yes; echo \\$? > '" +
                             status.string() + "'; } | head -1 > /dev/null";
  const auto start = std::chrono::steady_clock::now();
  int rc = std::system(("timeout -s KILL 20 sh -c \"" + script + "\" 2>/dev/null").c_str());
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(rc, 0);
  EXPECT_LT(took.count(), 5.0);
  std::ifstream in(status);
  int code = -1;
  in >> code;
  EXPECT_EQ(code, 128 + SIGPIPE);
}

}  // namespace
}  // namespace hvdrun::itest
