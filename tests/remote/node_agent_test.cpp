// The node agent run for real (a child process, frames over its stdin and stdout): several
// workers at once, exit codes, signals, working directory and exec errors, output within the
// launcher's credit, failures reported ahead of unsent output, and the teardown when the
// launcher goes away or the agent is told to end.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <map>
#include <set>

#include "launcher/agent/agent_protocol.h"
#include "tests/remote/agent_process.h"

namespace hvdrun::launcher::agent {
namespace {

using namespace std::chrono_literals;
using ssh::test::AgentProcess;
using Clock = std::chrono::steady_clock;

SpawnFrame spawn(std::uint32_t id, const std::vector<std::string>& argv,
                 const std::vector<std::string>& env = {}, const std::string& cwd = "/") {
  return {id, {cwd, env, argv}};
}

struct Result {
  std::optional<int> pid;  // from Started
  std::string out, err;
  std::optional<ExitFrame> exit;
  bool closed = false;  // nothing more comes for it
  std::size_t output_after_exit = 0;
};

// Reads frames until every worker in `ids` is done or `timeout`; with `credit`, each Output is
// given back as credit at once (a launcher whose console keeps up).
std::map<std::uint32_t, Result> collect(AgentProcess& agent, std::set<std::uint32_t> ids,
                                        std::chrono::milliseconds timeout = 15s,
                                        bool credit = true) {
  std::map<std::uint32_t, Result> results;
  const auto deadline = Clock::now() + timeout;
  while (!ids.empty() && Clock::now() < deadline) {
    auto frame =
        agent.next_frame(std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()));
    if (!frame) break;
    if (auto* started = std::get_if<StartedFrame>(&*frame)) {
      results[started->id].pid = started->pid;
    } else if (auto* output = std::get_if<OutputFrame>(&*frame)) {
      Result& r = results[output->id];
      (output->stream == StreamKind::kStdout ? r.out : r.err) += output->bytes;
      if (r.exit) r.output_after_exit += output->bytes.size();
      if (credit) agent.send(CreditFrame{static_cast<std::uint32_t>(output->bytes.size())});
    } else if (auto* exit = std::get_if<ExitFrame>(&*frame)) {
      results[exit->id].exit = *exit;
      if (!exit->output_open) ids.erase(exit->id);
    } else if (auto* closed = std::get_if<OutputClosedFrame>(&*frame)) {
      results[closed->id].closed = true;
      ids.erase(closed->id);
    }
  }
  return results;
}

// Starts worker `id` as a shell that prints its pid and sleeps; its pid once printed, else -1.
pid_t start_sleeper(AgentProcess& agent, std::uint32_t id) {
  agent.send(spawn(id, {"/bin/sh", "-c", "echo $$; exec sleep 60"}));
  auto first = collect(agent, {id}, 2s);
  return first[id].out.empty() ? -1 : std::stoi(first[id].out);
}

TEST(NodeAgent, SaysHelloFirst) {
  AgentProcess agent;
  const auto frame = agent.next_frame(10s);
  ASSERT_TRUE(frame.has_value());
  const auto* hello = std::get_if<HelloFrame>(&*frame);
  ASSERT_NE(hello, nullptr);
  EXPECT_EQ(hello->version, kAgentProtocolVersion);
  EXPECT_EQ(hello->pid, agent.pid());
  EXPECT_FALSE(hello->host.empty());
}

TEST(NodeAgent, RunsSeveralWorkersAtOnceEachWithItsOutputAndExitCode) {
  AgentProcess agent;
  for (std::uint32_t id = 0; id < 4; ++id) {
    agent.send(spawn(
        id, {"/bin/sh", "-c", "echo out:$X:$PWD; echo err >&2; exit " + std::to_string(id + 3)},
        {"X=w" + std::to_string(id)}, "/tmp"));
  }
  auto results = collect(agent, {0, 1, 2, 3});
  ASSERT_EQ(results.size(), 4u);
  for (std::uint32_t id = 0; id < 4; ++id) {
    const Result& r = results[id];
    EXPECT_TRUE(r.pid.has_value()) << id;
    EXPECT_EQ(r.out, "out:w" + std::to_string(id) + ":/tmp\n");
    EXPECT_EQ(r.err, "err\n");
    ASSERT_TRUE(r.exit.has_value()) << id;
    EXPECT_EQ(r.exit->end, ProcessEnd::exited(static_cast<int>(id) + 3));
  }
}

TEST(NodeAgent, TwentyFourWorkersOnOneAgent) {
  AgentProcess agent;
  std::set<std::uint32_t> ids;
  for (std::uint32_t id = 0; id < 24; ++id) {
    agent.send(spawn(id, {"/bin/sh", "-c", "echo $ID", "sh"}, {"ID=" + std::to_string(id)}));
    ids.insert(id);
  }
  auto results = collect(agent, ids);
  ASSERT_EQ(results.size(), 24u);
  for (std::uint32_t id = 0; id < 24; ++id) {
    EXPECT_EQ(results[id].out, std::to_string(id) + "\n");
    ASSERT_TRUE(results[id].exit.has_value());
    EXPECT_TRUE(results[id].exit->end.success());
  }
}

// 500 KB of output, within the first credit but far more than the launcher's end (a 64 KiB
// pipe here) takes while nobody reads it: once the worker is gone, its end comes ahead of the
// output still queued, with output_open; then the rest of the output, then OutputClosed.
TEST(NodeAgent, AFailureIsReportedAheadOfOutputThatWaits) {
  AgentProcess agent;
  agent.send(spawn(7, {"/bin/sh", "-c", "head -c 500000 /dev/zero | tr '\\0' x; exit 3"}));
  std::optional<int> pid;
  while (!pid) {
    const auto frame = agent.next_frame(10s);
    ASSERT_TRUE(frame.has_value());
    if (const auto* started = std::get_if<StartedFrame>(&*frame)) pid = started->pid;
  }
  ASSERT_TRUE(ssh::test::wait_gone(*pid, 10s));  // exited, with its output unread
  auto results = collect(agent, {7});
  const Result& r = results[7];
  ASSERT_TRUE(r.exit.has_value());
  EXPECT_TRUE(r.exit->output_open);
  EXPECT_EQ(r.exit->end, ProcessEnd::exited(3));
  EXPECT_GT(r.output_after_exit, 0u);
  EXPECT_TRUE(r.closed);
  EXPECT_EQ(r.out, std::string(500000, 'x'));
}

// 3 MiB, more than the first credit (1 MiB): without more credit the agent sends at most the
// credit and the worker waits (back-pressure); its end comes after its output.
TEST(NodeAgent, ASuccessIsReportedAfterItsOutput) {
  AgentProcess agent;
  agent.send(spawn(1, {"/bin/sh", "-c", "head -c 3145728 /dev/zero | tr '\\0' x"}));
  auto first = collect(agent, {1}, 2s, false);
  EXPECT_FALSE(first[1].exit.has_value()) << "a success was reported before its output";
  EXPECT_LE(first[1].out.size(), kInitialCredit);
  agent.send(CreditFrame{static_cast<std::uint32_t>(first[1].out.size())});
  auto rest = collect(agent, {1});
  ASSERT_TRUE(rest[1].exit.has_value());
  EXPECT_FALSE(rest[1].exit->output_open);
  EXPECT_TRUE(rest[1].exit->end.success());
  EXPECT_EQ(first[1].out.size() + rest[1].out.size(), 3145728u);
}

TEST(NodeAgent, ShippedValuesOverrideOwnEnvironmentWhichIsKept) {
  ::setenv("HVDRUN_AGENT_TEST_OWN", "own", 1);
  ::setenv("HVDRUN_AGENT_TEST_OVER", "own", 1);
  AgentProcess agent;  // inherits both
  ::unsetenv("HVDRUN_AGENT_TEST_OWN");
  ::unsetenv("HVDRUN_AGENT_TEST_OVER");
  agent.send(spawn(0, {"/bin/sh", "-c", "echo $HVDRUN_AGENT_TEST_OWN $HVDRUN_AGENT_TEST_OVER"},
                   {"HVDRUN_AGENT_TEST_OVER=shipped"}));
  EXPECT_EQ(collect(agent, {0})[0].out, "own shipped\n");
}

TEST(NodeAgent, ProgramSearchedInShippedPath) {
  AgentProcess agent;
  agent.send(spawn(0, {"sh", "-c", "exit 3"}, {"PATH=/nonexistent:/bin"}));
  auto results = collect(agent, {0});
  ASSERT_TRUE(results[0].exit.has_value());
  EXPECT_EQ(results[0].exit->end, ProcessEnd::exited(3));
}

TEST(NodeAgent, AWorkersSignalIsItsEnd) {
  AgentProcess agent;
  agent.send(spawn(0, {"/bin/sh", "-c", "kill -SEGV $$"}));
  auto results = collect(agent, {0});
  ASSERT_TRUE(results[0].exit.has_value());
  EXPECT_EQ(results[0].exit->end.kind, ProcessEnd::Kind::kSignaled);
  EXPECT_EQ(results[0].exit->end.value, SIGSEGV);
}

TEST(NodeAgent, MissingWorkingDirectoryExits2NamingHostAndPath) {
  AgentProcess agent;
  agent.send(spawn(0, {"/bin/true"}, {}, "/nonexistent/hvdrun-dir"));
  auto results = collect(agent, {0});
  ASSERT_TRUE(results[0].exit.has_value());
  EXPECT_EQ(results[0].exit->end, ProcessEnd::exited(2));
  EXPECT_NE(results[0].err.find("hvdrun node agent on "), std::string::npos) << results[0].err;
  EXPECT_NE(results[0].err.find("cannot change to working directory '/nonexistent/hvdrun-dir': "
                                "No such file or directory"),
            std::string::npos)
      << results[0].err;
}

TEST(NodeAgent, MissingProgramExits127) {
  AgentProcess agent;
  agent.send(spawn(0, {"hvdrun-no-such-program"}, {"PATH=/usr/bin:/bin"}));
  agent.send(spawn(1, {"/bin/sh", "-c", "echo fine"}));
  auto results = collect(agent, {0, 1});
  ASSERT_TRUE(results[0].exit.has_value());
  EXPECT_EQ(results[0].exit->end, ProcessEnd::exited(127));
  EXPECT_EQ(results[0].err, "cannot run 'hvdrun-no-such-program': No such file or directory\n");
  EXPECT_EQ(results[1].out, "fine\n");  // the agent goes on
}

TEST(NodeAgent, ABadFrameEndsTheAgentWith2AndTakesItsWorkersDown) {
  AgentProcess agent;
  const pid_t worker = start_sleeper(agent, 0);
  ASSERT_GT(worker, 0);
  agent.write(std::string("\x05\x00\x00\x00\x63GARBAGE", 12));
  const auto status = agent.finish(10s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(WEXITSTATUS(*status), 2);
  EXPECT_NE(agent.err().find("bad frame from the launcher: agent protocol: unknown frame type 99"),
            std::string::npos)
      << agent.err();
  EXPECT_TRUE(ssh::test::wait_gone(worker, 5s));
}

TEST(NodeAgent, ASignalReachesOneWorkerAndTheOthersGoOn) {
  AgentProcess agent;
  agent.send(spawn(0, {"/bin/sh", "-c", "echo ready; exec sleep 30"}));
  agent.send(spawn(1, {"/bin/sh", "-c",
                       "trap 'echo usr1; exit 0' USR1; echo ready; while :; do sleep 0.05; done"}));
  auto ready = collect(agent, {0, 1}, 2s);
  ASSERT_EQ(ready[0].out, "ready\n");
  ASSERT_EQ(ready[1].out, "ready\n");
  agent.send(SignalFrame{0, SIGTERM});
  auto ended = collect(agent, {0}, 10s);
  ASSERT_TRUE(ended[0].exit.has_value());
  EXPECT_EQ(ended[0].exit->end, ProcessEnd::signaled(SIGTERM));
  EXPECT_FALSE(ended[1].exit.has_value()) << "worker 1 was signaled too";
  agent.send(SignalFrame{1, SIGUSR1});
  auto forwarded = collect(agent, {1}, 10s);
  EXPECT_EQ(forwarded[1].out, "usr1\n");
  ASSERT_TRUE(forwarded[1].exit.has_value());
  EXPECT_TRUE(forwarded[1].exit->end.success());
}

// A stacks request: one Stacks frame per running worker, with its pid and eu-stack's frames of
// its threads, and the workers go on (they end only when signaled afterwards).
TEST(NodeAgent, StacksOfEveryRunningWorkerComeAndTheWorkersGoOn) {
  AgentProcess agent;
  agent.send(spawn(0, {"/bin/sh", "-c", "echo ready; exec sleep 30"}));
  agent.send(spawn(1, {"/bin/sh", "-c", "echo ready; exec sleep 30"}));
  auto ready = collect(agent, {0, 1}, 2s);
  ASSERT_EQ(ready[0].out, "ready\n");
  agent.send(StacksRequestFrame{});
  std::map<std::uint32_t, StacksFrame> stacks;
  const auto deadline = Clock::now() + 20s;
  while (stacks.size() < 2 && Clock::now() < deadline) {
    auto frame = agent.next_frame(1s);
    if (!frame) continue;
    if (auto* s = std::get_if<StacksFrame>(&*frame)) stacks[s->id] = *s;
    ASSERT_FALSE(std::holds_alternative<ExitFrame>(*frame)) << "a worker ended";
  }
  ASSERT_EQ(stacks.size(), 2u);
  for (const auto& [id, s] : stacks) {
    EXPECT_GT(s.pid, 0);
    EXPECT_TRUE(s.python.empty());  // not Python programs
    EXPECT_NE(s.native.find("TID " + std::to_string(s.pid) + ":"), std::string::npos)
        << s.native << s.note;
  }
  agent.send(SignalFrame{SignalFrame::kEveryWorker, SIGTERM});
  auto ended = collect(agent, {0, 1}, 10s);
  for (const std::uint32_t id : {0u, 1u}) {
    ASSERT_TRUE(ended[id].exit.has_value());
    EXPECT_EQ(ended[id].exit->end, ProcessEnd::signaled(SIGTERM));
  }
}

TEST(NodeAgent, SendsHeartbeatsWhileIdle) {
  AgentProcess agent;
  bool heartbeat = false;
  const auto deadline = Clock::now() + 10s;
  while (!heartbeat && Clock::now() < deadline) {
    const auto frame = agent.next_frame(1s);
    heartbeat = frame && std::holds_alternative<HeartbeatFrame>(*frame);
  }
  EXPECT_TRUE(heartbeat);
}

// The launcher goes away: every worker (which ignores SIGTERM) and its children die after the
// grace time, and the agent exits.
TEST(NodeAgent, EofKillsEveryWorkerAndItsChildren) {
  AgentProcess agent;
  for (std::uint32_t id = 0; id < 2; ++id) {
    agent.send(spawn(id, {"/bin/sh", "-c", "trap '' TERM; sleep 60 & echo $$ $!; wait; wait"}));
  }
  auto first = collect(agent, {0, 1}, 2s);
  std::vector<pid_t> pids;
  for (std::uint32_t id = 0; id < 2; ++id) {
    ASSERT_NE(first[id].out.find(' '), std::string::npos) << first[id].out;
    pids.push_back(std::stoi(first[id].out));
    pids.push_back(std::stoi(first[id].out.substr(first[id].out.find(' ') + 1)));
  }
  agent.close_stdin();
  ASSERT_TRUE(agent.finish(10s).has_value());
  for (const pid_t pid : pids) EXPECT_TRUE(ssh::test::wait_gone(pid, 5s)) << pid;
}

// SIGTERM to the agent (a scheduler's preemption): each worker gets it once, even when the
// launcher's own SIGTERM follows; a worker that saves for a while is given the time, its last
// lines are relayed and its end reported; the agent lives on until the launcher closes.
TEST(NodeAgent, SigtermReachesEachWorkerOnceAndTheAgentRelaysTheirLastLines) {
  AgentProcess agent;
  for (std::uint32_t id = 0; id < 2; ++id) {
    agent.send(spawn(id, {"/bin/sh", "-c",
                          "n=0; trap 'n=$((n+1)); echo term $n' TERM; echo ready; "
                          "while [ $n = 0 ]; do sleep 0.05; done; sleep 0.7; echo saved $n"}));
  }
  std::map<std::uint32_t, Result> ready;
  for (int i = 0; i < 200; ++i) {  // both running their trap
    auto frame = agent.next_frame(100ms);
    if (!frame) continue;
    if (auto* output = std::get_if<OutputFrame>(&*frame)) {
      ready[output->id].out += output->bytes;
      agent.send(CreditFrame{static_cast<std::uint32_t>(output->bytes.size())});
    }
    if (ready[0].out.find("ready") != std::string::npos &&
        ready[1].out.find("ready") != std::string::npos) {
      break;
    }
  }
  ASSERT_NE(ready[1].out.find("ready"), std::string::npos);
  ::kill(agent.pid(), SIGTERM);
  agent.send(SignalFrame{SignalFrame::kEveryWorker, SIGTERM});  // the launcher's, after it
  auto done = collect(agent, {0, 1}, 10s);
  for (std::uint32_t id = 0; id < 2; ++id) {
    ASSERT_TRUE(done[id].exit.has_value()) << id << " " << agent.err();
    EXPECT_TRUE(done[id].exit->end.success()) << done[id].exit->end.describe();
    EXPECT_NE(done[id].out.find("term 1\nsaved 1\n"), std::string::npos) << done[id].out;
  }
  EXPECT_NE(agent.err().find("SIGTERM from pid "), std::string::npos) << agent.err();
  EXPECT_NE(agent.err().find("passed to its workers"), std::string::npos) << agent.err();
  EXPECT_FALSE(agent.wait_exit(200ms).has_value());  // still serving the launcher
  agent.close_stdin();
  ASSERT_TRUE(agent.finish(10s).has_value());
}

// SIGINT (or SIGHUP) to the agent ends it now: its workers are taken down.
TEST(NodeAgent, SigintToTheAgentTakesItsWorkersDown) {
  AgentProcess agent;
  const pid_t worker = start_sleeper(agent, 0);
  ASSERT_GT(worker, 0);
  ::kill(agent.pid(), SIGINT);
  const auto status = agent.finish(10s);
  ASSERT_TRUE(status.has_value());
  EXPECT_NE(agent.err().find("ending on SIGINT"), std::string::npos) << agent.err();
  EXPECT_TRUE(ssh::test::wait_gone(worker, 5s));
}

// The agent is SIGKILLed: its workers die with it (their parent-death signal).
TEST(NodeAgent, SigkillOfTheAgentKillsItsWorkers) {
  AgentProcess agent;
  const pid_t worker = start_sleeper(agent, 0);
  ASSERT_GT(worker, 0);
  ::kill(agent.pid(), SIGKILL);
  ASSERT_TRUE(agent.wait_exit(5s).has_value());
  EXPECT_TRUE(ssh::test::wait_gone(worker, 5s));
}

}  // namespace
}  // namespace hvdrun::launcher::agent
