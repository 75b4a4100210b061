// Integration: the signals a scheduler or a person sends to hvdrun. The warnings (SIGUSR1,
// SIGUSR2, SIGHUP by default) reach every worker and the job goes on; SIGTERM ends the job
// with its grace period, also when `timeout` delivers it twice at once; the summary names the
// signal and its sender instead of a rank.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <string>
#include <thread>

#include "tests/integration/hvdrun_runner.h"

namespace hvdrun::itest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(Signals, Usr1ReachesEveryRankAndTheJobGoesOn) {
  TempDir pids;
  HvdrunProcess hvdrun({"-np", "3", worker(), "await-usr1", pids.path.string()});
  ASSERT_EQ(wait_for_pids(pids.path, 3, seconds(20)).size(), 3u);
  hvdrun.signal(SIGUSR1);
  auto r = hvdrun.finish(seconds(30));
  EXPECT_EQ(r.status, 0) << r.err;  // every worker exits 0 once it has its SIGUSR1
  EXPECT_EQ(rank_missing_line(r.out, 3, " got SIGUSR1"), std::nullopt) << r.out;
  EXPECT_TRUE(contains(r.err, "hvdrun: forwarded SIGUSR1 from pid ")) << r.err;
  EXPECT_TRUE(contains(r.err, " to 3 ranks\n")) << r.err;
  EXPECT_FALSE(contains(r.err, "interrupted")) << r.err;
}

TEST(Signals, ASignalLeftOutOfForwardSignalsDoesNotReachTheWorkers) {
  TempDir pids;
  HvdrunProcess hvdrun(
      {"--forward-signals", "none", "-np", "2", worker(), "sleep", pids.path.string()});
  const auto workers = wait_for_pids(pids.path, 2, seconds(20));
  ASSERT_EQ(workers.size(), 2u);
  hvdrun.signal(SIGUSR1);
  // Said once hvdrun handled it: a forward, had there been one, would have come first.
  ASSERT_TRUE(hvdrun.wait_for_output("ignored: not in --forward-signals", 1));
  for (const pid_t pid : workers) EXPECT_TRUE(alive(pid)) << "a worker died of SIGUSR1";
  hvdrun.signal(SIGTERM);
  auto r = hvdrun.finish(seconds(20));
  EXPECT_EQ(r.status, 143) << r.err;
  EXPECT_TRUE(contains(r.err, "ignored: not in --forward-signals")) << r.err;
}

// GNU timeout sends SIGTERM to hvdrun and then to its own process group, which holds hvdrun:
// two SIGTERMs microseconds apart are one signal, and the workers keep their grace period.
TEST(Signals, SigtermFromTimeoutKeepsTheGracePeriodForACheckpoint) {
  TempDir pids;
  HvdrunProcess hvdrun("/usr/bin/timeout",
                       {"-s", "TERM", "2", HVDRUN_BINARY, "--grace-period", "20", "-np", "2",
                        worker(), "checkpoint", pids.path.string(), "1000"},
                       {}, "/dev/null");
  auto r = hvdrun.finish(seconds(40));
  EXPECT_EQ(r.status, 124) << r.err;  // timeout's own status once it had to signal
  EXPECT_TRUE(contains(r.out, "[0]<stdout>:rank 0 checkpoint done\n")) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "[1]<stdout>:rank 1 checkpoint done\n")) << r.out << r.err;
  EXPECT_FALSE(contains(r.err, "killing every rank now")) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "hvdrun: interrupted (SIGTERM), terminating 2 ranks, grace period "
                       "20 s; sent by pid "))
      << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: job stopped by SIGTERM from pid ")) << r.err;
  EXPECT_TRUE(contains(r.err, "(timeout), not by a failed rank\n")) << r.err;
  EXPECT_FALSE(contains(r.err, "job failed")) << r.err;
}

// The same with a Python program that saves a checkpoint in its SIGTERM handler: it finishes
// (1 s) within the grace period and the job is said to be stopped, not failed.
TEST(Signals, APythonWorkerCheckpointsOnSigtermWithinTheGracePeriod) {
  TempDir dir;
  const std::string program =
      "import os, signal, sys, time\n"
      "def on_term(signo, frame):\n"
      "    time.sleep(1)\n"
      "    open(os.path.join(sys.argv[1], 'ckpt.%s' % os.environ['RANK']), 'w').write('saved')\n"
      "    print('rank %s checkpoint done' % os.environ['RANK'], flush=True)\n"
      "    sys.exit(0)\n"
      "signal.signal(signal.SIGTERM, on_term)\n"
      "open(os.path.join(sys.argv[1], '%s.pid' % os.environ['RANK']), "
      "'w').write(str(os.getpid()))\n"
      "time.sleep(60)\n";
  HvdrunProcess hvdrun(
      {"--grace-period", "10", "-np", "2", "/usr/bin/python3", "-c", program, dir.path.string()});
  ASSERT_EQ(wait_for_pids(dir.path, 2, seconds(30)).size(), 2u);
  hvdrun.signal(SIGTERM);
  auto r = hvdrun.finish(seconds(30));
  EXPECT_EQ(r.status, 143) << r.err;
  EXPECT_EQ(rank_missing_line(r.out, 2, " checkpoint done"), std::nullopt) << r.out << r.err;
  for (const char* rank : {"0", "1"}) {
    EXPECT_TRUE(std::filesystem::exists(dir.path / (std::string("ckpt.") + rank))) << rank;
  }
  EXPECT_FALSE(contains(r.err, "SIGKILL")) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: job stopped by SIGTERM from pid ")) << r.err;
}

// A grace period too short for the checkpoint: the summary says how many were killed.
TEST(Signals, TheSummarySaysWhichRanksTheGracePeriodCutShort) {
  TempDir pids;
  HvdrunProcess hvdrun(
      {"--grace-period", "0.3", "-np", "2", worker(), "checkpoint", pids.path.string(), "5000"});
  const auto workers = wait_for_pids(pids.path, 2, seconds(20));
  ASSERT_EQ(workers.size(), 2u);
  hvdrun.signal(SIGTERM);
  auto r = hvdrun.finish(seconds(30));
  EXPECT_EQ(r.status, 143) << r.err;
  EXPECT_FALSE(contains(r.out, "checkpoint done")) << r.out;
  EXPECT_TRUE(contains(r.err,
                       "not by a failed rank; 2 ranks killed with SIGKILL when the grace "
                       "period was over\n"))
      << r.err;
  EXPECT_TRUE(wait_until_gone(workers, milliseconds(500)).empty());
}

// A SIGTERM that is pending when the job's handlers go in (here: blocked and pending when
// hvdrun is exec'd, as a parent that blocks signals leaves it; hvdrun blocks them itself from
// the end of its parsing) ends the job as one that comes later does: exit status 143, not a
// job that never sees it.
TEST(Signals, ASigtermPendingWhenTheJobStartsEndsIt) {
  const std::string start =
      "import os, signal, sys; signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM]); "
      "os.kill(os.getpid(), signal.SIGTERM); os.execv(sys.argv[1], sys.argv[1:])";
  HvdrunProcess hvdrun("/usr/bin/python3",
                       {"-c", start, HVDRUN_BINARY, "-np", "2", "sh", "-c", "sleep 30"}, {},
                       "/dev/null");
  const auto r = hvdrun.finish(seconds(60));
  EXPECT_EQ(r.status, 143) << r.err;
  EXPECT_TRUE(contains(r.err, "interrupted (SIGTERM)")) << r.err;
  EXPECT_LT(r.seconds, 20.0);
}

// A thousand SIGUSR1 are each forwarded, but said in a few lines. (How many the kernel merges
// varies; what each line then says of the ones held is NoteRate's unit test.)
TEST(Signals, AFloodOfWarningsIsAFewLines) {
  TempDir pids;  // each worker writes its pid once its trap is set
  HvdrunProcess hvdrun(
      {"-np", "2", "sh", "-c",
       "trap '' USR1; echo $$ > " + pids.path.string() + "/$RANK.pid; sleep 3; exit 0"});
  ASSERT_EQ(wait_for_pids(pids.path, 2, seconds(30)).size(), 2u);
  for (int i = 0; i < 1000; ++i) hvdrun.signal(SIGUSR1);
  const auto r = hvdrun.finish(seconds(60));
  EXPECT_EQ(r.status, 0) << r.err;
  const std::size_t lines = count_of(r.err, "hvdrun: forwarded SIGUSR1");
  EXPECT_GE(lines, 1u) << r.err;
  EXPECT_LE(lines, 6u) << r.err;
}

// A second SIGTERM clearly later than the first still means "now".
TEST(Signals, ASecondSigtermASecondLaterKillsEveryRankNow) {
  TempDir pids;
  HvdrunProcess hvdrun(
      {"--grace-period", "30", "-np", "2", worker(), "ignore-term", pids.path.string(), "99"});
  const auto workers = wait_for_pids(pids.path, 2, seconds(20));
  ASSERT_EQ(workers.size(), 2u);
  hvdrun.signal(SIGTERM);
  ASSERT_TRUE(hvdrun.wait_for_output("interrupted (SIGTERM), terminating", 1));
  std::this_thread::sleep_for(milliseconds(1300));  // "clearly later"
  hvdrun.signal(SIGTERM);
  auto r = hvdrun.finish(seconds(20));
  EXPECT_EQ(r.status, 143) << r.err;
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_TRUE(contains(r.err, "second SIGTERM from pid ")) << r.err;
  EXPECT_TRUE(wait_until_gone(workers, milliseconds(500)).empty());
}

}  // namespace
}  // namespace hvdrun::itest
