// The launcher's port for node agents that connect to it: a real agent process (the test
// agent, `--node-agent --connect`) proves the secret and is handed to the wait for its node;
// a wrong secret, an unknown node and a stranger are refused, named; the srun command line.
#include "launcher/remote/agent_listener.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "common/unique_fd.h"
#include "hvdrun/error.h"
#include "launcher/agent/agent_protocol.h"
#include "launcher/remote/agent_dismissal.h"
#include "launcher/remote/agent_transport.h"
#include "launcher/remote/srun_step.h"
#include "launcher/ssh/ssh_socket.h"
#include "tests/support/wait_until.h"

namespace hvdrun::launcher::remote {
namespace {

using namespace std::chrono_literals;

const std::string kAgentSecret(64, 'a');

// The test agent connecting to 127.0.0.1:`port` as `node` with `secret`; its stderr in a pipe.
class ConnectingAgent {
 public:
  ConnectingAgent(std::uint16_t port, const std::string& node, const std::string& secret) {
    int err[2];
    if (::pipe(err) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(err[1], 2);
      ::setenv("HVDRUN_AGENT_SECRET", secret.c_str(), 1);
      const std::string endpoint = "127.0.0.1:" + std::to_string(port);
      ::execl(TEST_AGENT, TEST_AGENT, "--node-agent", "--connect", endpoint.c_str(), "--node",
              node.c_str(), "--connect-timeout", "5", static_cast<char*>(nullptr));
      ::_exit(126);
    }
    ::close(err[1]);
    err_ = err[0];
  }
  ~ConnectingAgent() {
    if (pid_ > 0) {  // never kill(-1): that signals every process of the user
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(err_);
  }
  pid_t pid() const { return pid_; }
  // Its exit status (-1 after a signal: signal() says which) and stderr, once it exits.
  std::pair<int, std::string> finish() {
    std::string text;
    char buffer[4096];
    long n;
    while ((n = ::read(err_, buffer, sizeof buffer)) > 0) text.append(buffer, n);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    signal_ = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text};
  }
  int signal() const { return signal_; }

 private:
  pid_t pid_ = -1;
  int err_ = -1;
  int signal_ = 0;
};

// A first run on a listener of `port` that ends telling the agent of `node` to come again (as
// --preflight's probes' run does): its status goes out, then the connection and port close.
void run_once_then_again(std::uint16_t port, const std::string& node) {
  AgentListener listener("127.0.0.1", kAgentSecret, {node}, port);
  ssh::SocketCanceller canceller;
  AgentConnection connection = listener.wait_for(node, Clock::now() + 10s, canceller);
  ASSERT_NE(connection.transport, nullptr);
  connection.transport->write(agent::encode(agent::JobEndFrame{0, true}));
  connection.transport->step([](StreamKind, std::string_view) {});
  listener.close_port();
}

// A free port on loopback now.
std::uint16_t free_port() {
  AgentListener probe("127.0.0.1", kAgentSecret, {"x"});
  return probe.port();
}

TEST(AgentListener, AnAgentWithTheSecretIsHandedToTheWaitForItsNode) {
  AgentListener listener("127.0.0.1", kAgentSecret, {"node-a", "node-b"});
  ConnectingAgent agent(listener.port(), "node-b", kAgentSecret);
  ssh::SocketCanceller canceller;
  AgentConnection connection = listener.wait_for("node-b", Clock::now() + 10s, canceller);
  ASSERT_NE(connection.transport, nullptr);
  EXPECT_EQ(connection.ready.where.rfind("node-b (node agent, 127.0.0.1:", 0), 0u)
      << connection.ready.where;
  EXPECT_EQ(connection.ready.local_addr, "127.0.0.1");
  EXPECT_THROW(listener.wait_for("node-a", Clock::now() + 200ms, canceller), TimeoutError);
}

TEST(AgentListener, AWrongSecretIsRefusedOnBothSides) {
  AgentListener listener("127.0.0.1", kAgentSecret, {"node-a"});
  ConnectingAgent agent(listener.port(), "node-a", std::string(64, 'b'));
  ssh::SocketCanceller canceller;
  EXPECT_THROW(listener.wait_for("node-a", Clock::now() + 2s, canceller), TimeoutError);
  const auto [status, err] = agent.finish();
  EXPECT_EQ(status, 2) << err;
  EXPECT_NE(err.find("hvdrun node agent: the launcher at 127.0.0.1:"), std::string::npos) << err;
  EXPECT_NE(err.find("the launcher refused this agent's proof: the secrets differ"),
            std::string::npos)
      << err;
}

TEST(AgentListener, AnAgentOfAnotherNodeIsRefused) {
  AgentListener listener("127.0.0.1", kAgentSecret, {"node-a"});
  ConnectingAgent stranger(listener.port(), "node-z", kAgentSecret);
  ssh::SocketCanceller canceller;
  EXPECT_THROW(listener.wait_for("node-a", Clock::now() + 1s, canceller), TimeoutError);
  const auto [status, err] = stranger.finish();  // told why: it ends, non-zero
  EXPECT_EQ(status, 2) << err;
  EXPECT_NE(err.find("the launcher refused this node: 'node-z' is not a host of this job"),
            std::string::npos)
      << err;
}

// A second agent for a node that has one (two nodes given the same --node-rank) is told so.
TEST(AgentListener, ASecondAgentOfANodeIsRefusedSayingWhy) {
  AgentListener listener("127.0.0.1", kAgentSecret, {"node-a"});
  ConnectingAgent first(listener.port(), "node-a", kAgentSecret);
  ssh::SocketCanceller canceller;
  const auto connection = listener.wait_for("node-a", Clock::now() + 10s, canceller);
  ASSERT_NE(connection.transport, nullptr);
  ConnectingAgent second(listener.port(), "node-a", kAgentSecret);
  const auto [status, err] = second.finish();
  EXPECT_EQ(status, 2) << err;
  EXPECT_NE(err.find("the launcher refused this node: node 'node-a' already has its agent"),
            std::string::npos)
      << err;
}

TEST(AgentListener, AConnectionThatSaysNothingDoesNotBlockOthers) {
  AgentListener listener("127.0.0.1", kAgentSecret, {"node-a"});
  const int silent = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(listener.port());
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  ASSERT_EQ(::connect(silent, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ConnectingAgent agent(listener.port(), "node-a", kAgentSecret);
  ssh::SocketCanceller canceller;
  EXPECT_NE(listener.wait_for("node-a", Clock::now() + 5s, canceller).transport, nullptr);
  ::close(silent);
}

// `count` connections to `port` that say nothing and stay open, from 127.0.0.1.
std::vector<UniqueFd> idle_strangers(std::uint16_t port, std::size_t count) {
  std::vector<UniqueFd> strangers;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  for (std::size_t i = 0; i < count; ++i) {
    // Close-on-exec: the agent started later must not hold them open.
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      throw std::runtime_error("connect: " + std::string(std::strerror(errno)));
    }
    strangers.push_back(std::move(fd));
  }
  return strangers;
}

// Hundreds of strangers connect first and hold their connections without a word (more than
// the slots for unproven connections): the agent that comes after them still gets in, well
// within its start timeout, while they stay connected. The time it took is printed.
class IdleStrangers : public ::testing::TestWithParam<std::size_t> {};

TEST_P(IdleStrangers, DoNotKeepTheAgentOut) {
  AgentListener listener("127.0.0.1", kAgentSecret, {"node-a"});
  const auto strangers = idle_strangers(listener.port(), GetParam());
  const auto start = Clock::now();
  ConnectingAgent agent(listener.port(), "node-a", kAgentSecret);
  ssh::SocketCanceller canceller;
  EXPECT_NE(listener.wait_for("node-a", Clock::now() + 20s, canceller).transport, nullptr);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  std::printf("%zu idle strangers: the agent was in after %lld ms\n", GetParam(),
              static_cast<long long>(took.count()));
  EXPECT_LE(listener.unproven(), AuthenticatedAcceptor::Limits{}.max_unproven);
}

INSTANTIATE_TEST_SUITE_P(AgentListener, IdleStrangers, ::testing::Values(150, 1000));

// Strangers keep coming while the agent connects (a thread opens and holds a connection every
// millisecond, 2,000 in all): a newcomer displaces the oldest waiting connection, never one
// that proved the secret, and the agent, closed before the launcher's proof at worst, comes
// back and gets in.
TEST(AgentListener, StrangersThatKeepComingDoNotKeepTheAgentOut) {
  AgentListener listener("127.0.0.1", kAgentSecret, {"node-a"});
  std::atomic<bool> stop{false};
  std::vector<UniqueFd> held;
  std::thread strangers([&] {
    for (int i = 0; i < 2000 && !stop; ++i) {
      auto more = idle_strangers(listener.port(), 1);
      held.push_back(std::move(more.front()));
      std::this_thread::sleep_for(1ms);
    }
  });
  // The slots are full and turning over.
  EXPECT_TRUE(hvdrun::test::wait_until(
      [&] { return listener.unproven() == AuthenticatedAcceptor::Limits{}.max_unproven; }, 30s));
  ConnectingAgent agent(listener.port(), "node-a", kAgentSecret);
  ssh::SocketCanceller canceller;
  const auto connection = listener.wait_for("node-a", Clock::now() + 20s, canceller);
  stop = true;
  strangers.join();
  EXPECT_NE(connection.transport, nullptr);
}

// The agent told to come again connects to the port's next listener: here the dismissal of a
// per-node start's agents after --preflight-only, whose status the agent exits with.
TEST(AgentListener, AnAgentToldToComeAgainFindsTheNextListenerAndExitsWithItsStatus) {
  const std::uint16_t port = free_port();
  ConnectingAgent agent(port, "node-a", kAgentSecret);
  run_once_then_again(port, "node-a");
  EXPECT_TRUE(dismiss_agents(kAgentSecret, port, {"node-a"}, 7, 10s).empty());
  const auto [status, err] = agent.finish();
  EXPECT_EQ(status, 7) << err;
  EXPECT_NE(err.find("runs again after its checks: connecting again"), std::string::npos) << err;
}

// Between two runs nothing runs on the node: SIGTERM ends the agent at once, as before its
// first run, though it tries to connect again.
TEST(AgentListener, AnAgentBetweenTwoRunsEndsOnSigterm) {
  const std::uint16_t port = free_port();
  ConnectingAgent agent(port, "node-a", kAgentSecret);
  run_once_then_again(port, "node-a");
  std::this_thread::sleep_for(700ms);  // refused by the closed port at least once
  const auto sent = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(agent.pid(), SIGTERM), 0);
  const auto [status, err] = agent.finish();
  EXPECT_EQ(agent.signal(), SIGTERM) << status << " " << err;
  EXPECT_LT(std::chrono::steady_clock::now() - sent, 2s);
}

// A dismissal whose agent never comes back ends at its timeout, naming the node.
TEST(AgentListener, ADismissalWhoseAgentDoesNotComeEndsAtItsTimeout) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(dismiss_agents(kAgentSecret, free_port(), {"node-a", "node-b"}, 1, 300ms),
            (std::vector<std::string>{"node-a", "node-b"}));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
}

TEST(AgentListener, FailAllEndsTheWaits) {
  AgentListener listener("127.0.0.1", kAgentSecret, {"node-a"});
  listener.fail_all("srun ended (exit code 1) before the node agent of this host connected");
  ssh::SocketCanceller canceller;
  try {
    listener.wait_for("node-a", Clock::now() + 10s, canceller);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "srun ended (exit code 1) before the node agent of this host connected");
  }
}

TEST(Srun, VersionsWithAndWithoutExternalLauncher) {
  EXPECT_FALSE(srun_has_external_launcher("slurm 22.05.8\n"));
  EXPECT_FALSE(srun_has_external_launcher("slurm 23.02.7\n"));
  EXPECT_TRUE(srun_has_external_launcher("slurm 23.11.1\n"));
  EXPECT_TRUE(srun_has_external_launcher("slurm-wlm 24.05.0\n"));
  EXPECT_FALSE(srun_has_external_launcher("something else"));
}

TEST(Srun, OneAgentPerNodeStaticAndElastic) {
  SrunOptions srun;
  srun.srun = "srun";
  const auto stat =
      srun_agent_command(srun, false, {"n1", "n2"}, "/opt/hvdrun", "10.0.0.1:4000", 30s);
  EXPECT_EQ(stat, (std::vector<std::string>{
                      "srun", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1", "--nodelist=n1,n2",
                      "--mpi=none", "--cpu-bind=none", "--job-name=hvdrun-agents", "--overlap",
                      "--kill-on-bad-exit=1", "/opt/hvdrun", "--node-agent", "--connect",
                      "10.0.0.1:4000", "--connect-timeout", "30.0"}));
  srun.elastic = true;
  const auto elastic = srun_agent_command(srun, true, {"n1"}, "/opt/hvdrun", "10.0.0.1:4000", 30s);
  EXPECT_NE(std::find(elastic.begin(), elastic.end(), "--external-launcher"), elastic.end());
  EXPECT_NE(std::find(elastic.begin(), elastic.end(), "--no-kill"), elastic.end());
  EXPECT_NE(std::find(elastic.begin(), elastic.end(), "--kill-on-bad-exit=0"), elastic.end());
  for (const auto& word : elastic) EXPECT_EQ(word.find(std::string(64, 'a')), std::string::npos);
}

}  // namespace
}  // namespace hvdrun::launcher::remote
