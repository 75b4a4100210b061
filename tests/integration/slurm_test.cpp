// Jobs inside a real Slurm allocation (scripts/slurm-test-cluster.sh: slurmctld and 3 slurmd
// "nodes" in network namespaces): hvdrun with no host flags trains on every node of the
// allocation, its node agents started by one srun step; sbatch; heterogeneous task counts; a
// node's agent killed; scancel of the job; an elastic job losing a node; --preflight. Nothing may
// be left on any node.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/integration/elastic_jobs.h"
#include "tests/integration/hvdrun_runner.h"
#include "tests/integration/slurm_cluster.h"
#include "tests/support/proc_file.h"
#include "tests/support/wait_until.h"

namespace hvdrun::itest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(Slurm, SallocWithNoHostFlagsTrainsOnEveryNode) {
  REQUIRE_SLURM();
  auto r = HvdrunProcess(
               "/usr/bin/salloc",
               {"-N", "3", "-n", "6", HVDRUN_BINARY, "--verbose", TRAIN_EXAMPLE, "--epochs", "1"},
               slurm_env(), "/dev/null")
               .finish(seconds(90));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "hosts from Slurm job")) << r.err;
  EXPECT_TRUE(contains(r.err, "hvds-n[1-3] (3 hosts, 6 slots)")) << r.err;
  // salloc's shell runs outside the allocation (in the root network namespace): hvdrun moves
  // to the first node, runs rank 0 and the rendezvous there, and starts the others' agents.
  EXPECT_TRUE(contains(r.err, "this machine is not in Slurm job ")) << r.err;
  EXPECT_TRUE(contains(r.err, "running the job from its first node, hvds-n1")) << r.err;
  EXPECT_TRUE(contains(r.err, "rank 0 on hvds-n1 (pid ")) << r.err;
  EXPECT_FALSE(contains(r.err, "node agent of hvds-n1 (")) << r.err;
  for (int node = 2; node <= 3; ++node) {
    EXPECT_TRUE(contains(r.err, "node agent of hvds-n" + std::to_string(node) + " (")) << r.err;
  }
  EXPECT_EQ(r.err.find("hosts from Slurm job"), r.err.rfind("hosts from Slurm job")) << r.err;
  EXPECT_TRUE(contains(r.out, "[0]<stdout>:all 6 ranks agree")) << r.out << r.err;
  EXPECT_TRUE(wait_nodes_idle(seconds(10)).empty()) << joined(wait_nodes_idle(seconds(0)));
}

// The hvdrun that moved into its allocation passes none of its move's variables (its control
// port's secret among them) to any worker, on its own node or through the agents' srun.
TEST(Slurm, NoWorkerSeesTheMovesVariables) {
  REQUIRE_SLURM();
  auto r = HvdrunProcess("/usr/bin/salloc",
                         {"-N", "3", "-n", "3", HVDRUN_BINARY, "/bin/sh", "-c",
                          "echo rank $RANK has $(env | grep -c HVDRUN_SLURM_) move variables"},
                         slurm_env(), "/dev/null")
               .finish(seconds(60));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "running the job from its first node")) << r.err;
  EXPECT_EQ(rank_missing_line(r.out, 3, " has 0 move variables"), std::nullopt) << r.out;
}

// -n 3 on 2 nodes: SLURM_TASKS_PER_NODE=2,1; each rank says where it runs.
TEST(Slurm, HeterogeneousTaskCountsGiveEachNodeItsSlots) {
  REQUIRE_SLURM();
  auto r = HvdrunProcess("/usr/bin/salloc",
                         {"-N", "2", "-n", "3", HVDRUN_BINARY, "/bin/sh", "-c",
                          "echo rank $RANK on $(hostname) local $LOCAL_RANK"},
                         slurm_env(), "/dev/null")
               .finish(seconds(60));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "rank 0 on hvds-n1 local 0")) << r.out;
  EXPECT_TRUE(contains(r.out, "rank 1 on hvds-n1 local 1")) << r.out;
  EXPECT_TRUE(contains(r.out, "rank 2 on hvds-n2 local 0")) << r.out;
}

TEST(Slurm, SbatchOfTheSameJobTrains) {
  REQUIRE_SLURM();
  TempDir dir;
  const auto out = dir.path / "job.out";
  {
    std::ofstream script(dir.path / "job.sh");
    script << "#!/bin/sh\n" << HVDRUN_BINARY << " " << TRAIN_EXAMPLE << " --epochs 1\n";
  }
  auto r = HvdrunProcess(
               "/usr/bin/sbatch",
               {"--wait", "-N", "3", "-n", "3", "-o", out.string(), (dir.path / "job.sh").string()},
               slurm_env(), "/dev/null")
               .finish(seconds(90));
  std::ifstream in(out);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(r.status, 0) << r.err << text;
  EXPECT_TRUE(contains(text, "[0]<stdout>:all 3 ranks agree")) << text;
}

// The recipe of docs/running-jobs.md: a batch script that `exec`s hvdrun gets the scheduler's
// warning (sbatch --signal=B:USR1@90, here sent at once by scancel -b), and hvdrun forwards it
// to every rank on every node; each worker exits 0 once it has it.
TEST(Slurm, Usr1ToTheBatchScriptReachesEveryRankOnEveryNode) {
  REQUIRE_SLURM();
  TempDir dir;
  const auto pids = dir.path / "pids";
  std::filesystem::create_directory(pids);
  const auto out = dir.path / "job.out";
  {
    std::ofstream script(dir.path / "job.sh");
    script << "#!/bin/sh\nexec " << HVDRUN_BINARY << " " << worker() << " await-usr1 "
           << pids.string() << "\n";
  }
  HvdrunProcess job("/usr/bin/sbatch",
                    {"--wait", "-N", "3", "-n", "3", "-J", "hvdrun-usr1-test", "-o", out.string(),
                     (dir.path / "job.sh").string()},
                    slurm_env(), "/dev/null");
  ASSERT_EQ(wait_for_pids(pids, 3, seconds(30)).size(), 3u);
  ASSERT_EQ(std::system("SLURM_CONF=/tmp/hvds-slurm/slurm.conf scancel -b -s USR1 "
                        "-n hvdrun-usr1-test"),
            0);
  const auto r = job.finish(seconds(60));
  std::ifstream in(out);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(r.status, 0) << r.err << text;
  EXPECT_EQ(rank_missing_line(text, 3, " got SIGUSR1"), std::nullopt) << text;
  EXPECT_TRUE(contains(text, "hvdrun: forwarded SIGUSR1")) << text;
  EXPECT_TRUE(wait_nodes_idle(seconds(20)).empty()) << joined(wait_nodes_idle(seconds(0)));
}

// The pid of the node agent on node i (its process in that node's namespace), or -1.
pid_t agent_on(int node) {
  for (const auto& entry : node_leftovers(node)) {
    const std::string pid = entry.substr(0, entry.find(' '));
    const std::string text = hvdrun::test::read_proc_file("/proc/" + pid + "/cmdline");
    if (text.find(std::string("--node-agent\0", 13)) != std::string::npos) return std::stoi(pid);
  }
  return -1;
}

pid_t wait_agent_on(int node, milliseconds deadline) {
  pid_t pid = -1;
  hvdrun::test::wait_until([&] { return (pid = agent_on(node)) >= 0; }, deadline, milliseconds(50));
  return pid;
}

// The child of `parent` whose command is `name` (from /proc/<pid>/stat), or -1.
pid_t child_named(pid_t parent, const std::string& name) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text;
    std::getline(stat, text);
    const auto open = text.find('('), close = text.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent && text.substr(open + 1, close - open - 1) == name) return std::stoi(pid);
  }
  return -1;
}

TEST(Slurm, AKilledNodeAgentFailsAStaticJobNamingItsNode) {
  REQUIRE_SLURM();
  TempDir dir;
  HvdrunProcess job("/usr/bin/salloc",
                    {"-N", "3", "-n", "3", HVDRUN_BINARY, "/bin/sh", "-c",
                     "echo $$ > " + dir.path.string() + "/$HVDRUN_SLOT.pid; exec sleep 60"},
                    slurm_env(), "/dev/null");
  const pid_t agent = wait_agent_on(3, seconds(20));
  ASSERT_GT(agent, 0);
  ASSERT_EQ(wait_for_pids(dir.path, 3, seconds(40)).size(), 3u);  // its worker runs
  ASSERT_EQ(::kill(agent, SIGKILL), 0);
  const auto r = job.finish(seconds(60));
  EXPECT_NE(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "the node agent on hvds-n3 (")) << r.err;
  EXPECT_TRUE(contains(r.err, "job failed: first failure was rank 2 on hvds-n3")) << r.err;
  EXPECT_TRUE(wait_nodes_idle(seconds(15)).empty()) << joined(wait_nodes_idle(seconds(0)));
}

// scancel of the allocation while its job runs: Slurm ends the step and salloc's shell, and
// nothing is left on any node.
TEST(Slurm, ScancelLeavesNothingOnAnyNode) {
  REQUIRE_SLURM();
  TempDir dir;
  HvdrunProcess job("/usr/bin/salloc",
                    {"-N", "3", "-n", "3", "-J", "hvdrun-scancel-test", HVDRUN_BINARY, "/bin/sh",
                     "-c", "echo $$ > " + dir.path.string() + "/$HVDRUN_SLOT.pid; exec sleep 60"},
                    slurm_env(), "/dev/null");
  ASSERT_GT(wait_agent_on(3, seconds(20)), 0);
  ASSERT_EQ(wait_for_pids(dir.path, 3, seconds(40)).size(), 3u);  // the job runs
  ASSERT_EQ(std::system("SLURM_CONF=/tmp/hvds-slurm/slurm.conf scancel -n hvdrun-scancel-test"), 0);
  const auto r = job.finish(seconds(60));
  EXPECT_NE(r.status, 0) << r.err;
  EXPECT_TRUE(wait_nodes_idle(seconds(20)).empty()) << joined(wait_nodes_idle(seconds(0)));
}

// Ctrl-C to an hvdrun that moved into its allocation (salloc's shell runs outside it) reaches
// the moved hvdrun (scancel --signal on its step) and ends the job there as it would here:
// exit status 130, nothing left on any node.
TEST(Slurm, CtrlCToAMovedHvdrunEndsTheJobOnEveryNode) {
  REQUIRE_SLURM();
  HvdrunProcess job("/usr/bin/salloc",
                    {"-N", "3", "-n", "3", HVDRUN_BINARY, "/bin/sh", "-c", "exec sleep 60"},
                    slurm_env(), "/dev/null");
  ASSERT_GT(wait_agent_on(3, seconds(20)), 0);
  std::this_thread::sleep_for(milliseconds(500));
  const pid_t outer = child_named(job.pid(), "hvdrun");
  ASSERT_GT(outer, 0);
  ASSERT_EQ(::kill(outer, SIGINT), 0);
  const auto r = job.finish(seconds(60));
  EXPECT_EQ(r.status, 130) << r.err;
  EXPECT_TRUE(contains(r.err, "running the job from its first node, hvds-n1")) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: interrupted (SIGINT), terminating 3 ranks")) << r.err;
  EXPECT_TRUE(wait_nodes_idle(seconds(20)).empty()) << joined(wait_nodes_idle(seconds(0)));
}

// --preflight in an allocation: the probes check every node through their own agents, then the
// job runs; the moved hvdrun connects back for each of its two runs, so a Ctrl-C still reaches
// the job's.
TEST(Slurm, APreflightChecksEveryNodeAndCtrlCThenReachesTheMovedJob) {
  REQUIRE_SLURM();
  TempDir dir;
  HvdrunProcess job(
      "/usr/bin/salloc",
      {"-N", "3", "-n", "3", HVDRUN_BINARY, "--preflight", "--preflight-slack", "95", "/bin/sh",
       "-c", "echo $$ > " + dir.path.string() + "/$HVDRUN_SLOT.pid; exec sleep 60"},
      slurm_env(), "/dev/null");
  ASSERT_EQ(wait_for_pids(dir.path, 3, seconds(40)).size(), 3u);
  std::this_thread::sleep_for(milliseconds(300));
  const pid_t outer = child_named(job.pid(), "hvdrun");
  ASSERT_GT(outer, 0);
  ASSERT_EQ(::kill(outer, SIGINT), 0);
  const auto r = job.finish(seconds(60));
  EXPECT_EQ(r.status, 130) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: preflight of 3 hosts in ")) << r.err;
  for (int node = 1; node <= 3; ++node) {
    EXPECT_TRUE(std::regex_search(
        r.err, std::regex("hvds-n" + std::to_string(node) + R"( +ok +ok .* ok\n)")))
        << r.err;
  }
  EXPECT_FALSE(contains(r.err, "cannot reach the hvdrun this one moved from")) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: interrupted (SIGINT), terminating 3 ranks")) << r.err;
  EXPECT_TRUE(wait_nodes_idle(seconds(20)).empty()) << joined(wait_nodes_idle(seconds(0)));
}

// Preemption: scancel of a batch job of 3 nodes x 2 ranks. Slurm sends every process of the
// job SIGTERM; every rank, on every node, gets it once, is given its grace period to save (1 s
// here), and its last line reaches the job's output; the agents' messages say srun, not SSH.
TEST(Slurm, ScancelOfABatchJobLetsEveryRankSaveOnce) {
  REQUIRE_SLURM();
  TempDir dir;
  const auto pids = dir.path / "pids";
  std::filesystem::create_directory(pids);
  const auto out = dir.path / "job.out";
  {
    std::ofstream script(dir.path / "job.sh");
    script << "#!/bin/sh\nexec " << HVDRUN_BINARY << " /bin/sh -c '"
           << "n=0; trap \"n=\\$((n+1))\" TERM; echo $$ > " << pids.string() << "/$RANK.pid; "
           << "while [ $n = 0 ]; do sleep 0.05; done; sleep 1; "
           << "echo rank $RANK saved after $n SIGTERM'\n";
  }
  HvdrunProcess job("/usr/bin/sbatch",
                    {"--wait", "-N", "3", "-n", "6", "-J", "hvdrun-preempt-test", "-o",
                     out.string(), (dir.path / "job.sh").string()},
                    slurm_env(), "/dev/null");
  ASSERT_EQ(wait_for_pids(pids, 6, seconds(30)).size(), 6u);
  ASSERT_EQ(std::system("SLURM_CONF=/tmp/hvds-slurm/slurm.conf scancel -n hvdrun-preempt-test"), 0);
  job.finish(seconds(60));
  // sbatch --wait returns once the job is cancelled: its processes may still be saving.
  EXPECT_TRUE(wait_nodes_idle(seconds(20)).empty()) << joined(wait_nodes_idle(seconds(0)));
  std::ifstream in(out);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(rank_missing_line(text, 6, " saved after 1 SIGTERM"), std::nullopt) << text;
  EXPECT_TRUE(contains(text, "the scheduler signalled this machine's ranks and the nodes' itself"))
      << text;
  EXPECT_FALSE(contains(text, "[ssh]")) << text;
}

// An elastic job of 3 nodes (srun --no-kill) under salloc with `flags`, whose node 3's agent
// is SIGKILLed once the three train together; returns the job's end.
RunResult elastic_job_losing_node_3(std::vector<std::string> flags, int epochs) {
  TempDir dir;
  auto args = elastic_job(dir, std::move(flags), epochs);
  std::vector<std::string> salloc{"-N", "3", "-n", "3", HVDRUN_BINARY};
  salloc.insert(salloc.end(), args.begin(), args.end());
  HvdrunProcess job("/usr/bin/salloc", salloc, slurm_env(), "/dev/null");
  wait_for_pids(dir.path, 3, seconds(30));
  EXPECT_TRUE(job.wait_for_output("starts as rank", 3)) << "the three train together";
  const pid_t agent = agent_on(3);
  EXPECT_GT(agent, 0);
  if (agent > 0) {
    EXPECT_EQ(::kill(agent, SIGKILL), 0);
  }
  return job.finish(seconds(150));
}

// An elastic job (srun --no-kill) loses node 3's agent: the job re-forms on the 2 other nodes
// and finishes with every sample applied once.
TEST(Slurm, AnElasticJobLosingANodeReFormsWithoutIt) {
  REQUIRE_SLURM();
  const auto r =
      elastic_job_losing_node_3({"--min-np", "2", "--blacklist-cooldown-range", "60", "600"}, 12);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "host hvds-n3 unused for 60 s; re-forming with 2 surviving workers"))
      << r.err;
  EXPECT_TRUE(contains(r.out, "applied 98304 samples of 98304; all ranks agree")) << r.out;
  EXPECT_TRUE(wait_nodes_idle(seconds(15)).empty()) << joined(wait_nodes_idle(seconds(0)));
}

// The same loss with a 1 s cooldown: when the node is used again, a new srun step starts a new
// agent there (nothing of the old one is reused), its workers join, and the job finishes with
// all three.
TEST(Slurm, ALostNodeGetsANewAgentFromANewStepWhenUsedAgain) {
  REQUIRE_SLURM();
  const auto r = elastic_job_losing_node_3(
      {"--min-np", "2", "--blacklist-cooldown-range", "1", "1", "--reset-limit", "2", "--verbose"},
      16);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "hvds-n3: a new node agent in place of the lost one")) << r.err;
  EXPECT_FALSE(contains(r.err, "unused for 2 s")) << "the node failed again: " << r.err;
  const auto done = finished(r.out);
  EXPECT_EQ(done.size(), 3u) << r.out << r.err;
  for (const auto& [pid, entry] : done) EXPECT_EQ(entry.first, 3) << r.out;
  EXPECT_TRUE(wait_nodes_idle(seconds(15)).empty()) << joined(wait_nodes_idle(seconds(0)));
}

}  // namespace
}  // namespace hvdrun::itest
