// Multi-node jobs on the sshd test hosts (scripts/test-hosts.sh): training across hosts,
// output and exit codes, fail-fast and teardown across hosts, no process left behind.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <map>
#include <string>

#include "tests/integration/hvdrun_runner.h"
#include "tests/integration/multinode_hosts.h"
#include "tests/remote/test_hosts.h"

namespace hvdrun::itest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(TestHostsJob, ExampleTrainsOnTwoHostsAndAllRanksAgree) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  auto r = run_hvdrun({"-np", "4", "-H", "hvdt-h1:2,hvdt-h2:2", TRAIN_EXAMPLE, "--epochs", "2"},
                      home.env(), seconds(90));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "[0]<stdout>:all 4 ranks agree")) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "training on 4 ranks")) << r.out;
}

TEST(TestHostsJob, LocalAndRemoteRanksTrainTogether) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  auto r = run_hvdrun({"-np", "3", "-H", "localhost:1,hvdt-h2:2", TRAIN_EXAMPLE, "--epochs", "1"},
                      home.env(), seconds(90));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "all 3 ranks agree")) << r.out << r.err;
}

// hvdrun's stdin reaches rank 0 only on this machine: with rank 0 on a test host, the job says
// that its input is not read; with rank 0 here, rank 0 reads it and nothing is said.
TEST(TestHostsJob, StdinReachesALocalRankZeroAndARemoteOneIsWarnedAbout) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  TempDir dir;
  const auto input = (dir.path / "input").string();
  std::ofstream(input) << "typed\n";
  auto job = [](const std::string& hosts) {
    return std::vector<std::string>{
        "-np", "2", "-H", hosts, "sh", "-c", "cat; echo \"$RANK done\""};
  };
  HvdrunProcess remote_first(job("hvdt-h1:1,localhost:1"), home.env(), input);
  auto r = remote_first.finish(seconds(60));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "hvdrun: warning: hvdrun's stdin is not read: it reaches only a rank 0 on "
                       "this machine, and rank 0 runs on host hvdt-h1\n"))
      << r.err;
  EXPECT_TRUE(contains(r.out, "[0]<stdout>:0 done\n")) << r.out;
  EXPECT_FALSE(contains(r.out, "typed")) << r.out;

  HvdrunProcess local_first(job("localhost:1,hvdt-h2:1"), home.env(), input);
  r = local_first.finish(seconds(60));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "[0]<stdout>:typed\n")) << r.out;
  EXPECT_FALSE(contains(r.err, "stdin")) << r.err;
}

// A shell fragment for rank 3 of a 4-rank job: wait (at most 20 s) until every rank has
// written its file into `dir`, so that remote start-up time (a slow login shell) does not
// decide which ranks ran before rank 3 fails.
std::string wait_for_all_ranks(const std::string& dir) {
  return "for i in $(seq 400); do [ $(ls " + dir + " | wc -l) -ge 4 ] && break; sleep 0.05; done; ";
}

// Every rank's lines arrive with its prefix and its host; rank 3 (host 2) fails with 7 and
// hvdrun exits 7 naming it.
TEST(TestHostsJob, OutputPrefixesAndExitCodeAcrossHosts) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  TempDir up;
  const std::string script =
      "echo \"rank $RANK local $LOCAL_RANK on $(hostname)\"; echo \"to stderr $RANK\" >&2; "
      "touch " +
      up.path.string() +
      "/$RANK; "
      "if [ \"$RANK\" = 3 ]; then " +
      wait_for_all_ranks(up.path.string()) + "echo 'rank 3 gives up' >&2; exit 7; fi; sleep 30";
  auto r = run_hvdrun({"-np", "4", "-H", "hvdt-h1:2,hvdt-h2:2", "sh", "-c", script}, home.env(),
                      seconds(60));
  EXPECT_EQ(r.status, 7) << r.err;
  for (const char* line :
       {"[0]<stdout>:rank 0 local 0 on hvdt-h1\n", "[1]<stdout>:rank 1 local 1 on hvdt-h1\n",
        "[2]<stdout>:rank 2 local 0 on hvdt-h2\n", "[3]<stdout>:rank 3 local 1 on hvdt-h2\n"}) {
    EXPECT_TRUE(contains(r.out, line)) << line << " missing from:\n" << r.out;
  }
  for (int rank = 0; rank < 4; ++rank) {
    const auto line = "[" + std::to_string(rank) + "]<stderr>:to stderr " + std::to_string(rank);
    EXPECT_TRUE(contains(r.err, line)) << line << " missing from:\n" << r.err;
  }
  EXPECT_TRUE(
      contains(r.err, "hvdrun: job failed: first failure was rank 3 on hvdt-h2: exit code 7"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "    rank 3 gives up")) << r.err;
  EXPECT_LT(r.seconds, 20.0);
  EXPECT_TRUE(wait_hosts_idle({1, 2}, seconds(5)).empty());
}

// A rank that SIGKILLs itself on host 2 takes down host 1: exit 137, named in the summary.
TEST(TestHostsJob, RankKilledOnHostTwoTakesDownHostOne) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  TempDir pids;
  const std::string script =
      "echo $$ > " + pids.path.string() + "/$RANK.pid; if [ \"$RANK\" = 3 ]; then " +
      wait_for_all_ranks(pids.path.string()) + "kill -9 $$; fi; exec sleep 60";
  auto r = run_hvdrun({"-np", "4", "-H", "hvdt-h1:2,hvdt-h2:2", "sh", "-c", script}, home.env(),
                      seconds(60));
  EXPECT_EQ(r.status, 137) << r.err;
  EXPECT_TRUE(contains(r.err, "rank 3 (host hvdt-h2) was killed by signal SIGKILL (9)")) << r.err;
  EXPECT_TRUE(contains(
      r.err, "job failed: first failure was rank 3 on hvdt-h2: killed by signal SIGKILL (9)"))
      << r.err;
  EXPECT_LT(r.seconds, 10.0) << "sleep honours SIGTERM: no grace period needed";
  const auto workers = wait_for_pids(pids.path, 4, milliseconds(0));
  EXPECT_EQ(workers.size(), 4u);
  EXPECT_TRUE(wait_until_gone(workers, seconds(2)).empty());
}

// Ranks 0 to 2 on two hosts fill hvdrun's stdout, which nobody reads; rank 3 on host 2 exits
// 3 (`flood_args` says whether it writes too). hvdrun must notice at once and end every rank,
// while nothing reads its stdout; the reader then gets every line, whole and in order, and
// hvdrun's result with the per-rank line counts.
struct FloodJob {
  RunResult result;
  std::map<int, long> lines;
};

FloodJob run_remote_flood_job(const std::vector<std::string>& flood_args) {
  TestHome home;
  TempDir pids;
  std::vector<std::string> args{
      "-np", "4", "-H", "hvdt-h1:2,hvdt-h2:2", worker(), "flood", pids.path.string()};
  args.insert(args.end(), flood_args.begin(), flood_args.end());
  HvdrunProcess hvdrun(args, home.env());
  const auto workers = wait_for_pids(pids.path, 4, seconds(20));
  if (workers.size() != 4u) {
    ADD_FAILURE() << workers.size() << " of 4 ranks started";
    return {};
  }
  EXPECT_TRUE(wait_until_gone(workers, seconds(20)).empty())
      << "ranks still run while hvdrun's stdout is not read";
  FloodJob job{hvdrun.finish(seconds(60)), {}};
  EXPECT_EQ(job.result.status, 3) << job.result.err;
  EXPECT_TRUE(contains(job.result.err, "job failed: first failure was rank 3 on hvdt-h2"))
      << job.result.err;
  job.lines = check_flood_lines(job.result.out, false);
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_GT(job.lines.count(rank) ? job.lines.at(rank) : 0, 0) << "rank " << rank;
  }
  EXPECT_TRUE(wait_hosts_idle({1, 2}, seconds(5)).empty());
  return job;
}

// Rank 3 exits without output: its channel is still read while the others are paused.
TEST(TestHostsJob, ARemoteFailureIsHandledWhileNothingReadsStdout) {
  REQUIRE_TEST_HOSTS();
  run_remote_flood_job({"3", "3"});
}

// Rank 3 writes as much as its stdout takes before it exits 3 (rank 2, on the same host, has
// used up the host agent's output credit), so its own output waits unread in its pipe when it
// ends: its end is reported at once, its output follows. Every line it wrote arrives.
TEST(TestHostsJob, ARemoteFailureWithUnreadOutputIsHandledWhileNothingReadsStdout) {
  REQUIRE_TEST_HOSTS();
  const FloodJob job = run_remote_flood_job({"3", "3", "writes"});
  const std::string said = "rank 3 failing with 3 after ";
  const auto at = job.result.err.find(said);
  ASSERT_NE(at, std::string::npos) << job.result.err;
  const long written = std::stol(job.result.err.substr(at + said.size()));
  // A full pipe (64 KiB: 65 lines of 1000 bytes) at least: output waited when rank 3 ended.
  EXPECT_GE(written, 60) << "rank 3 did not fill its pipe: the test tested nothing new";
  EXPECT_EQ(job.lines.count(3) ? job.lines.at(3) : 0, written) << "rank 3's lines were lost";
}

TEST(TestHostsJob, CtrlCStopsEveryHost) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  TempDir pids;
  HvdrunProcess hvdrun(
      {"-np", "4", "-H", "hvdt-h1:2,hvdt-h2:2", worker(), "sleep", pids.path.string()}, home.env());
  const auto workers = wait_for_pids(pids.path, 4, seconds(20));
  ASSERT_EQ(workers.size(), 4u);
  hvdrun.signal(SIGINT);
  auto r = hvdrun.finish(seconds(20));
  EXPECT_EQ(r.status, 130) << r.err;
  EXPECT_TRUE(contains(r.err, "interrupted (SIGINT), terminating 4 ranks")) << r.err;
  EXPECT_TRUE(wait_until_gone(workers, seconds(2)).empty());
  EXPECT_TRUE(wait_hosts_idle({1, 2}, seconds(5)).empty());
}

// A scheduler's warning to hvdrun reaches the ranks on every host through their node agents,
// and the job goes on (each worker exits 0 once it has its SIGUSR1).
TEST(TestHostsJob, Usr1ReachesTheRanksOnEveryHost) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  TempDir pids;
  HvdrunProcess hvdrun(
      {"-np", "3", "-H", "localhost:1,hvdt-h1:2", worker(), "await-usr1", pids.path.string()},
      home.env());
  ASSERT_EQ(wait_for_pids(pids.path, 3, seconds(30)).size(), 3u);
  hvdrun.signal(SIGUSR1);
  auto r = hvdrun.finish(seconds(30));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(rank_missing_line(r.out, 3, " got SIGUSR1"), std::nullopt) << r.out;
  EXPECT_TRUE(wait_hosts_idle({1}, seconds(5)).empty());
}

// A rank on a test host sleeps while the others wait in an allreduce: the stall line names it
// with its host, and before --stall-shutdown ends the job its node agent sends its stack,
// written to its rank's file beside the output and shown on the console.
TEST(TestHostsJob, AStalledRemoteRankIsNamedWithItsStack) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  TempDir output;
  auto r = run_hvdrun(
      {"--output-filename", output.path.string(), "--stall-timeout", "1", "--stall-shutdown", "3",
       "-np", "3", "-H", "localhost:1,hvdt-h1:2", STALL_WORKER, "5", "2", "2", "60"},
      home.env(), seconds(60));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "rank 2 (host hvdt-h1, pid ")) << r.err;
  EXPECT_TRUE(contains(r.err, ") has not entered it: its last collective, #1, ended ")) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: stacks of 3 ranks (stall) collected in ")) << r.err;
  const auto top = r.err.find("hvdrun: rank 2 (host hvdt-h1, pid ");
  ASSERT_NE(top, std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" main\n", top), std::string::npos) << r.err;
  std::ifstream in(output.path / "stacks" / "rank.2.txt");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(contains(text, "==== rank 2 (host hvdt-h1, pid ")) << text;
  EXPECT_TRUE(contains(text, "---- native, every thread (eu-stack) ----")) << text;
  EXPECT_TRUE(wait_hosts_idle({1}, seconds(5)).empty());
}

// hvdrun dies without a chance to clean up: the SSH sessions close, the remote agents kill
// their workers and the workers' children; nothing is left on either host after 5 s.
TEST(TestHostsJob, SigkillOfHvdrunLeavesNoProcessOnAnyHost) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  TempDir pids;
  HvdrunProcess hvdrun(
      {"-np", "4", "-H", "hvdt-h1:2,hvdt-h2:2", worker(), "sleep", pids.path.string(), "child"},
      home.env());
  const auto workers = wait_for_pids(pids.path, 8, seconds(20));
  ASSERT_EQ(workers.size(), 8u);
  ASSERT_FALSE(host_processes(1).empty());
  hvdrun.signal(SIGKILL);
  auto r = hvdrun.finish(seconds(10));
  EXPECT_EQ(r.status, 128 + SIGKILL);
  const auto left = wait_hosts_idle({1, 2}, seconds(5));
  EXPECT_TRUE(left.empty()) << "left: " << (left.empty() ? "" : left.front());
  EXPECT_TRUE(wait_until_gone(workers, milliseconds(100)).empty());
}

// The SSH connection to host 2 breaks while its ranks run: that is those ranks' failure,
// reported as a lost connection, and the job ends with 255 on every host.
TEST(TestHostsJob, LostConnectionFailsTheJob) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  TempDir pids;
  HvdrunProcess hvdrun(
      {"-np", "4", "-H", "hvdt-h1:2,hvdt-h2:2", worker(), "sleep", pids.path.string()}, home.env());
  const auto workers = wait_for_pids(pids.path, 4, seconds(20));
  ASSERT_EQ(workers.size(), 4u);
  kill_ssh_sessions(2);
  auto r = hvdrun.finish(seconds(30));
  EXPECT_EQ(r.status, 255) << r.err;
  EXPECT_TRUE(contains(r.err, "lost connection to host hvdt-h2")) << r.err;
  EXPECT_TRUE(contains(r.err, "first failure was rank 2 on hvdt-h2") ||
              contains(r.err, "first failure was rank 3 on hvdt-h2"))
      << r.err;
  EXPECT_TRUE(wait_until_gone(workers, seconds(5)).empty());
  EXPECT_TRUE(wait_hosts_idle({1, 2}, seconds(5)).empty());
}

}  // namespace
}  // namespace hvdrun::itest
