// Per-node starts (Kubernetes' model): every "pod" (here a plain process on this machine)
// runs the same hvdrun command with its own node rank; node 0 runs the job, the others run
// node agents that connect to its endpoint, waiting for it when it comes late; the PyTorchJob
// variables alone; a wrong secret refused, named; --preflight and --preflight-only, after
// which every node exits with the outcome; a node whose launcher went away or that was
// refused exits non-zero; idle strangers on the endpoint keep no node out.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <regex>
#include <thread>

#include "tests/integration/hvdrun_runner.h"

namespace hvdrun::itest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A TCP port free on loopback now (bound, read, closed).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t size = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &size);
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::vector<std::string> node_command(int nnodes, int rank, int port,
                                      const std::string& secret_file) {
  return {"--nnodes",
          std::to_string(nnodes),
          "--node-rank",
          std::to_string(rank),
          "--nproc-per-node",
          "2",
          "--rdzv-endpoint",
          "127.0.0.1:" + std::to_string(port),
          "--rdzv-secret-file",
          secret_file,
          TRAIN_EXAMPLE,
          "--epochs",
          "1"};
}

struct SecretFile {
  explicit SecretFile(const std::string& secret) {
    std::ofstream(dir.path / "secret") << secret << "\n";
    std::filesystem::permissions(dir.path / "secret", std::filesystem::perms::owner_read |
                                                          std::filesystem::perms::owner_write);
  }
  std::string path() const { return (dir.path / "secret").string(); }
  TempDir dir;
};

// Node 2 first, node 1 next, node 0 (the job) 2 s late: the agents wait for it.
TEST(PerNode, ThreeNodesStartedInAnyOrderTrainTogether) {
  const SecretFile secret("shared-secret-of-the-nodes");
  const int port = free_port();
  HvdrunProcess node2(node_command(3, 2, port, secret.path()));
  HvdrunProcess node1(node_command(3, 1, port, secret.path()));
  std::this_thread::sleep_for(seconds(2));
  auto job = run_hvdrun(node_command(3, 0, port, secret.path()), {}, seconds(90));
  EXPECT_EQ(job.status, 0) << job.err;
  EXPECT_TRUE(contains(job.out, "[0]<stdout>:all 6 ranks agree")) << job.out << job.err;
  for (HvdrunProcess* node : {&node1, &node2}) {
    const auto r = node->finish(seconds(30));
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(contains(r.err, "waiting for the launcher at 127.0.0.1:")) << r.err;
  }
}

// A job that fails: every node's hvdrun exits with the job's status, not only node 0's (a
// PyTorchJob's pods report the job's outcome).
TEST(PerNode, EveryNodeExitsWithTheJobsStatus) {
  const SecretFile secret("shared-secret-of-the-nodes");
  const int port = free_port();
  auto command = [&](int rank) {
    std::vector<std::string> args = node_command(2, rank, port, secret.path());
    args.resize(args.size() - 3);  // the program: instead of the training example
    for (const char* word : {"/bin/sh", "-c", "sleep 0.5; exit 3"}) args.push_back(word);
    return args;
  };
  HvdrunProcess node1(command(1));
  auto job = run_hvdrun(command(0), {}, seconds(60));
  EXPECT_EQ(job.status, 3) << job.err;
  const auto r = node1.finish(seconds(30));
  EXPECT_EQ(r.status, 3) << r.err;
}

// --preflight: node 0 checks every node through its agent, then runs the job there; each agent
// connects again for the job, and every node exits with the job's status.
TEST(PerNode, APreflightChecksEveryNodeThenTheJobRunsOnThem) {
  const SecretFile secret("shared-secret-of-the-nodes");
  const int port = free_port();
  auto command = [&](int rank) {
    std::vector<std::string> args = node_command(3, rank, port, secret.path());
    // Three nodes on one loaded machine time their matrix products at once: only a node
    // 95 % below the median fails, so that the test is about the run, not the machine's load.
    args.insert(args.begin(), {"--preflight", "--preflight-slack", "95"});
    return args;
  };
  HvdrunProcess node1(command(1));
  HvdrunProcess node2(command(2));
  auto job = run_hvdrun(command(0), {}, seconds(120));
  EXPECT_EQ(job.status, 0) << job.err;
  EXPECT_TRUE(contains(job.err, "hvdrun: preflight of 3 hosts in ")) << job.err;
  for (const std::string node : {"node-1", "node-2"}) {
    EXPECT_TRUE(std::regex_search(job.err, std::regex(node + R"( +ok +ok .* ok\n)"))) << job.err;
  }
  EXPECT_TRUE(contains(job.out, "[0]<stdout>:all 6 ranks agree")) << job.out << job.err;
  for (HvdrunProcess* node : {&node1, &node2}) {
    const auto r = node->finish(seconds(30));
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(contains(r.err, " runs again after its checks: connecting again")) << r.err;
  }
}

// No job after the checks (--preflight-only, or a node that failed them: --preflight-slack 0,
// where of two nodes the slower in some check fails): every node exits with the verdict.
TEST(PerNode, WithoutAJobAfterTheChecksEveryNodeExitsWithTheirVerdict) {
  const SecretFile secret("shared-secret-of-the-nodes");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--preflight-only", "95"}, {"--preflight-only", "0"}, {"--preflight", "0"}};
  for (const auto& test_case : cases) {
    const std::string& flag = test_case.first;  // not bindings: the lambda below captures them
    const std::string& slack = test_case.second;
    SCOPED_TRACE(flag + " --preflight-slack " + slack);
    const int port = free_port();
    auto command = [&](int rank) {
      std::vector<std::string> args = node_command(2, rank, port, secret.path());
      args.insert(args.begin(), {flag, "--preflight-slack", slack});
      return args;
    };
    HvdrunProcess node1(command(1));
    auto job = run_hvdrun(command(0), {}, seconds(90));
    const int verdict = slack == "0" ? 1 : 0;
    EXPECT_EQ(job.status, verdict) << job.err;
    EXPECT_EQ(contains(job.err, "FAIL: "), verdict == 1) << job.err;
    if (flag == "--preflight") {
      EXPECT_TRUE(contains(job.err, "failed its preflight check")) << job.err;
      EXPECT_TRUE(contains(job.err, "no worker was started")) << job.err;
    }
    EXPECT_FALSE(contains(job.out, "ranks agree")) << job.out;  // no job ran
    const auto r = node1.finish(seconds(30));
    EXPECT_EQ(r.status, verdict) << r.err;
  }
}

// What a PyTorchJob's operator sets, and nothing else on the command line.
TEST(PerNode, ThePyTorchJobVariablesAlone) {
  const int port = free_port();
  const auto env = [port](int rank) {
    return std::map<std::string, std::string>{{"PET_NNODES", "2"},
                                              {"PET_NODE_RANK", std::to_string(rank)},
                                              {"PET_NPROC_PER_NODE", "2"},
                                              {"PET_MASTER_ADDR", "127.0.0.1"},
                                              {"PET_MASTER_PORT", std::to_string(port)},
                                              {"HVDRUN_RDZV_SECRET", "from-a-kubernetes-secret"}};
  };
  HvdrunProcess node1({TRAIN_EXAMPLE, "--epochs", "1"}, env(1));
  auto job = run_hvdrun({TRAIN_EXAMPLE, "--epochs", "1"}, env(0), seconds(90));
  EXPECT_EQ(job.status, 0) << job.err;
  EXPECT_TRUE(contains(job.out, "[0]<stdout>:all 4 ranks agree")) << job.out << job.err;
  EXPECT_EQ(node1.finish(seconds(30)).status, 0);
}

// The nodes' long-lived secret (here in each pod's environment, as a Kubernetes Secret gives
// it) reaches no worker on any node, under any name: workers get a fresh key of the job's.
TEST(PerNode, NoWorkerSeesTheNodesSecret) {
  const int port = free_port();
  const std::string secret = "the-nodes-long-lived-secret";
  const auto env = [&](int rank) {
    return std::map<std::string, std::string>{{"PET_NNODES", "2"},
                                              {"PET_NODE_RANK", std::to_string(rank)},
                                              {"PET_NPROC_PER_NODE", "2"},
                                              {"PET_MASTER_ADDR", "127.0.0.1"},
                                              {"PET_MASTER_PORT", std::to_string(port)},
                                              {"HVDRUN_RDZV_SECRET", secret}};
  };
  const std::vector<std::string> program = {
      "/bin/sh", "-c", "echo rank $RANK has $(env | grep -c " + secret + ") copies"};
  HvdrunProcess node1(program, env(1));
  const auto job = run_hvdrun(program, env(0), seconds(60));
  EXPECT_EQ(job.status, 0) << job.err;
  EXPECT_EQ(rank_missing_line(job.out, 4, " has 0 copies"), std::nullopt) << job.out;
  EXPECT_EQ(node1.finish(seconds(30)).status, 0);
}

// Node 1 has another secret: node 0 refuses it, says so, and fails at its start timeout naming
// the node; node 1 says the launcher would not have it.
TEST(PerNode, AWrongSecretIsRefusedAndNamed) {
  const SecretFile right("the-right-secret"), wrong("a-wrong-secret-of-node-1");
  const int port = free_port();
  HvdrunProcess node1(node_command(2, 1, port, wrong.path()));
  auto cmd = node_command(2, 0, port, right.path());
  cmd.insert(cmd.begin(), {"--start-timeout", "4"});
  auto job = run_hvdrun(cmd, {}, seconds(60));
  EXPECT_NE(job.status, 0) << job.err;
  EXPECT_TRUE(contains(job.err, "its proof does not match this job's secret")) << job.err;
  EXPECT_TRUE(
      contains(job.err, "the node agent of node-1 did not connect within the start timeout"))
      << job.err;
  const auto r = node1.finish(seconds(30));
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "the launcher refused this agent's proof: the secrets differ"))
      << r.err;
}

// A program that writes its pid into `dir` (RANK.pid) and sleeps: workers to look for.
std::vector<std::string> sleeping_workers(std::vector<std::string> args, const TempDir& dir) {
  args.resize(args.size() - 3);  // the program: instead of the training example
  for (const std::string& word :
       {std::string("/bin/sh"), std::string("-c"),
        "echo $$ > " + dir.path.string() + "/$RANK.pid; exec sleep 120"}) {
    args.push_back(word);
  }
  return args;
}

// A job of 2 nodes x 2 sleeping workers, running once `workers` holds their 4 pids.
struct TwoSleepingNodes {
  std::vector<std::string> node(int rank) const {
    return sleeping_workers(node_command(2, rank, port, secret.path()), pids);
  }
  const SecretFile secret{"shared-secret-of-the-nodes"};
  const int port = free_port();
  const TempDir pids;
  HvdrunProcess node1{node(1)};
  HvdrunProcess node0{node(0)};
  const std::vector<pid_t> workers = wait_for_pids(pids.path, 4, seconds(60));
};

// Node 0 killed mid-job: the other node's hvdrun exits non-zero, saying why, and none of the
// workers (node 0's or its own) outlives its node's hvdrun.
TEST(PerNode, WhenNodeZeroIsKilledTheOthersExitNonZeroAndNoWorkerIsLeft) {
  TwoSleepingNodes job;
  ASSERT_EQ(job.workers.size(), 4u);
  job.node0.signal(SIGKILL);
  const auto r = job.node1.finish(seconds(30));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "closed the connection before the job's end")) << r.err;
  EXPECT_TRUE(wait_until_gone(job.workers, seconds(10)).empty());
  job.node0.finish(seconds(10));
}

// A node whose agent was stopped (SIGSTOP) past the launcher's heartbeat limit is lost and the
// job fails; continued, the node's hvdrun learns that and exits non-zero.
TEST(PerNode, ANodeLostWhileStoppedExitsNonZeroWhenContinued) {
  TwoSleepingNodes job;
  ASSERT_EQ(job.workers.size(), 4u);
  job.node1.signal(SIGSTOP);
  const auto end = job.node0.finish(seconds(60));  // the agent's silence: node-1 lost
  EXPECT_NE(end.status, 0) << end.err;
  job.node1.signal(SIGCONT);
  const auto r = job.node1.finish(seconds(30));
  EXPECT_NE(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "closed the connection before the job's end")) << r.err;
}

// Two nodes given the same --node-rank: the second is refused, says why, and exits non-zero.
TEST(PerNode, ASecondNodeOfTheSameRankIsRefusedSayingWhy) {
  TwoSleepingNodes job;
  ASSERT_EQ(job.workers.size(), 4u);
  HvdrunProcess again(job.node(1));
  const auto r = again.finish(seconds(30));
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(
      contains(r.err, "the launcher refused this node: node 'node-1' already has its agent"))
      << r.err;
  job.node0.signal(SIGTERM);
  EXPECT_NE(job.node0.finish(seconds(30)).status, 0);
  EXPECT_NE(job.node1.finish(seconds(30)).status, 0);
}

// `count` connections to 127.0.0.1:`port` that say nothing, made as soon as the port listens.
std::vector<int> idle_strangers(int port, int count, milliseconds deadline) {
  std::vector<int> strangers;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (static_cast<int>(strangers.size()) < count && std::chrono::steady_clock::now() < end) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      strangers.push_back(fd);
    } else {
      ::close(fd);
      std::this_thread::sleep_for(milliseconds(20));  // node 0 does not listen yet
    }
  }
  return strangers;
}

// 150 strangers hold idle connections to node 0's endpoint before node 1 comes: the job still
// forms and succeeds, and both nodes exit 0.
TEST(PerNode, IdleStrangersOnTheEndpointDoNotKeepANodeOut) {
  const SecretFile secret("shared-secret-of-the-nodes");
  const int port = free_port();
  HvdrunProcess node0(node_command(2, 0, port, secret.path()));
  const auto strangers = idle_strangers(port, 150, seconds(30));
  ASSERT_EQ(strangers.size(), 150u);
  const auto start = std::chrono::steady_clock::now();
  HvdrunProcess node1(node_command(2, 1, port, secret.path()));
  const auto job = node0.finish(seconds(90));
  EXPECT_EQ(job.status, 0) << job.err;
  EXPECT_TRUE(contains(job.out, "[0]<stdout>:all 4 ranks agree")) << job.out << job.err;
  std::printf("150 idle strangers: the job of 2 nodes ran in %lld ms\n",
              static_cast<long long>(
                  std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start)
                      .count()));
  EXPECT_EQ(node1.finish(seconds(30)).status, 0);
  for (const int fd : strangers) ::close(fd);
}

TEST(PerNode, BadFlagsAreNamed) {
  auto r = run_hvdrun({"--nnodes", "2", "--node-rank", "2", "true"}, {}, seconds(10));
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "--node-rank")) << r.err;
  r = run_hvdrun({"--nnodes", "2", "true"}, {}, seconds(10));
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "needs node 0's address: --rdzv-endpoint HOST:PORT")) << r.err;
  r = run_hvdrun({"--nnodes", "2", "--rdzv-endpoint", "h:1", "true"}, {}, seconds(10));
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err,
                       "needs the nodes' shared secret: --rdzv-secret-file FILE or "
                       "HVDRUN_RDZV_SECRET"))
      << r.err;
  r = run_hvdrun({"--nnodes", "2", "-H", "a:1", "true"}, {}, seconds(10));
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err,
                       "--nnodes and -H, --hostfile or a discovery script cannot be used "
                       "together"))
      << r.err;
  r = run_hvdrun({"true"}, {{"PET_NNODES", "1:4"}}, seconds(10));
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "PET_NNODES=1:4: a range of node counts is not supported")) << r.err;
}

}  // namespace
}  // namespace hvdrun::itest
