// The remote agent run for real (as a child process with piped stdio): exit codes, signals,
// working directory and exec errors, control messages and the EOF teardown.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>

#include "launcher/agent/remote_agent.h"
#include "tests/ssh/agent_process.h"

namespace hvdrun::launcher::ssh {
namespace {

using namespace std::chrono_literals;
using test::AgentProcess;

std::string spec(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
                 const std::string& cwd = "/") {
  return encode_agent_spec({cwd, env, argv});
}

TEST(AgentRun, RelaysOutputAndExitCode) {
  AgentProcess agent;
  agent.write(
      spec({"/bin/sh", "-c", "echo out:$X; echo err:$PWD >&2; exit 7"}, {"X=shipped"}, "/tmp"));
  const auto status = agent.finish(10s);
  ASSERT_TRUE(status.has_value());
  ASSERT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 7);
  EXPECT_EQ(agent.out(), "out:shipped\n");
  EXPECT_EQ(agent.err(), "err:/tmp\n");
}

// The worker fails while its output waits (nobody reads the agent's stdout): the agent exits
// with the worker's status at once, and a child of its own relays every byte afterwards.
TEST(AgentRun, AFailureWithUnreadOutputEndsTheAgentAtOnceAndTheOutputFollows) {
  AgentProcess agent;
  constexpr std::size_t kBytes = 100000;  // more than the agent's stdout pipe holds (64 KiB)
  agent.write(spec({"/bin/sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x; exit 3"}));
  const auto status = agent.wait_exit(10s);
  ASSERT_TRUE(status.has_value()) << "the agent waited for its output to be read";
  ASSERT_TRUE(WIFEXITED(*status)) << *status;
  EXPECT_EQ(WEXITSTATUS(*status), 3);
  ASSERT_TRUE(agent.read_to_eof(10s));
  EXPECT_EQ(agent.out(), std::string(kBytes, 'x'));
}

// A worker that exits 0 leaves no child behind: the agent ends after the output, as always.
TEST(AgentRun, ASuccessWithUnreadOutputEndsTheAgentAfterTheOutput) {
  AgentProcess agent;
  agent.write(spec({"/bin/sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x"}));
  EXPECT_FALSE(agent.wait_exit(500ms).has_value());
  const auto status = agent.finish(10s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(WEXITSTATUS(*status), 0);
  EXPECT_EQ(agent.out().size(), 100000u);
}

TEST(AgentRun, ShippedValuesOverrideOwnEnvironmentWhichIsKept) {
  ::setenv("HVDRUN_AGENT_TEST_OWN", "own", 1);
  ::setenv("HVDRUN_AGENT_TEST_OVER", "own", 1);
  AgentProcess agent;  // inherits both
  ::unsetenv("HVDRUN_AGENT_TEST_OWN");
  ::unsetenv("HVDRUN_AGENT_TEST_OVER");
  agent.write(spec({"/bin/sh", "-c", "echo $HVDRUN_AGENT_TEST_OWN $HVDRUN_AGENT_TEST_OVER"},
                   {"HVDRUN_AGENT_TEST_OVER=shipped"}));
  ASSERT_TRUE(agent.finish(10s).has_value());
  EXPECT_EQ(agent.out(), "own shipped\n");
}

TEST(AgentRun, ProgramSearchedInShippedPath) {
  AgentProcess agent;
  agent.write(spec({"sh", "-c", "exit 3"}, {"PATH=/nonexistent:/bin"}));
  const auto status = agent.finish(10s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(WEXITSTATUS(*status), 3);
}

TEST(AgentRun, WorkerSignalIsReRaised) {
  AgentProcess agent;
  agent.write(spec({"/bin/sh", "-c", "kill -SEGV $$"}));
  const auto status = agent.finish(10s);
  ASSERT_TRUE(status.has_value());
  ASSERT_TRUE(WIFSIGNALED(*status)) << *status;
  EXPECT_EQ(WTERMSIG(*status), SIGSEGV);
}

TEST(AgentRun, MissingWorkingDirectoryExits2NamingHostAndPath) {
  AgentProcess agent;
  agent.write(spec({"/bin/true"}, {}, "/nonexistent/hvdrun-dir"));
  const auto status = agent.finish(10s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(WEXITSTATUS(*status), 2);
  EXPECT_NE(agent.err().find("hvdrun remote agent on "), std::string::npos) << agent.err();
  EXPECT_NE(agent.err().find("cannot change to working directory '/nonexistent/hvdrun-dir': "
                             "No such file or directory"),
            std::string::npos)
      << agent.err();
}

TEST(AgentRun, MissingProgramExits127) {
  AgentProcess agent;
  agent.write(spec({"hvdrun-no-such-program"}, {"PATH=/usr/bin:/bin"}));
  const auto status = agent.finish(10s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(WEXITSTATUS(*status), 127);
  EXPECT_EQ(agent.err(), "cannot run 'hvdrun-no-such-program': No such file or directory\n");
}

TEST(AgentRun, BadSpecExits2) {
  AgentProcess agent;
  agent.write("GARBAGE-NOT-A-SPEC");
  agent.close_stdin();
  const auto status = agent.finish(10s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(WEXITSTATUS(*status), 2);
  EXPECT_NE(agent.err().find("bad spec"), std::string::npos) << agent.err();
}

TEST(AgentRun, TermOverStdinSignalsTheWorker) {
  AgentProcess agent;
  agent.write(spec({"/bin/sh", "-c", "echo ready; exec sleep 30"}));
  ASSERT_EQ(agent.read_line(10s), "ready");
  agent.write(std::string(encode_agent_control(AgentControl::kTerm)));
  const auto status = agent.finish(10s);
  ASSERT_TRUE(status.has_value());
  ASSERT_TRUE(WIFSIGNALED(*status));
  EXPECT_EQ(WTERMSIG(*status), SIGTERM);
}

TEST(AgentRun, KillOverStdinSignalsTheWorker) {
  AgentProcess agent;
  agent.write(spec({"/bin/sh", "-c", "trap '' TERM; echo ready; while :; do sleep 1; done"}));
  ASSERT_EQ(agent.read_line(10s), "ready");
  agent.write(std::string(encode_agent_control(AgentControl::kKill)));
  const auto status = agent.finish(10s);
  ASSERT_TRUE(status.has_value());
  ASSERT_TRUE(WIFSIGNALED(*status));
  EXPECT_EQ(WTERMSIG(*status), SIGKILL);
}

TEST(AgentRun, EofKillsTheWorkerAndItsChildren) {
  AgentProcess agent;
  // The worker ignores SIGTERM, so only the SIGKILL after the grace period ends it.
  agent.write(spec({"/bin/sh", "-c", "trap '' TERM; sleep 60 & echo $$ $!; wait; wait"}));
  const auto line = agent.read_line(10s);
  ASSERT_TRUE(line.has_value());
  const pid_t worker = std::stoi(*line);
  const pid_t child = std::stoi(line->substr(line->find(' ') + 1));
  const auto start = std::chrono::steady_clock::now();
  agent.close_stdin();
  ASSERT_TRUE(agent.finish(10s).has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_TRUE(test::wait_gone(worker, 5s));
  EXPECT_TRUE(test::wait_gone(child, 5s));
}

}  // namespace
}  // namespace hvdrun::launcher::ssh
