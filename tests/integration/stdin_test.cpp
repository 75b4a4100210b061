// hvdrun's stdin reaches the worker of rank 0, from a file, and from the terminal hvdrun runs
// in (a pseudo-terminal made by the test, hvdrun in its foreground as in a shell): rank 0 reads
// it and sets its modes without being stopped, the modes come back after it, and a background
// hvdrun does not take the terminal's input.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "tests/integration/hvdrun_runner.h"

namespace hvdrun::itest {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::seconds;

struct TerminalRun {
  int status = -1;     // hvdrun's exit code, or 128 + signal; -1: killed at the deadline
  std::string screen;  // everything the terminal showed
  tcflag_t local_modes_after = 0;
};

// Runs hvdrun in a new pseudo-terminal, which is its controlling terminal, with hvdrun in the
// terminal's foreground (or, `in_background`, in a process group of its own, as `hvdrun &`
// in an interactive shell). Types `typed` into it and reads the screen until hvdrun ends.
TerminalRun run_in_terminal(const std::vector<std::string>& args, const std::string& typed,
                            bool in_background = false) {
  std::vector<std::string> argv{HVDRUN_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> c_argv;
  for (auto& a : argv) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  if (pid < 0) throw std::runtime_error("forkpty failed");
  if (pid == 0) {
    if (in_background) {
      const pid_t job = ::fork();
      if (job == 0) {
        ::setpgid(0, 0);
        ::execv(c_argv[0], c_argv.data());
        ::_exit(126);
      }
      int status = 0;
      ::waitpid(job, &status, 0);
      ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
    ::execv(c_argv[0], c_argv.data());
    ::_exit(126);
  }
  TerminalRun run;
  if (::write(master, typed.data(), typed.size()) != static_cast<ssize_t>(typed.size())) {
    ADD_FAILURE() << "cannot type into the terminal";
  }
  const auto deadline = Clock::now() + seconds(20);
  char buffer[4096];
  bool killed = false;
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0 && !killed) {
      ::kill(pid, SIGKILL);
      killed = true;
    }
    pollfd pfd{master, POLLIN, 0};
    if (::poll(&pfd, 1, killed ? 1000 : static_cast<int>(left)) <= 0) {
      if (killed) break;
      continue;
    }
    const ssize_t n = ::read(master, buffer, sizeof buffer);
    if (n <= 0) break;  // EIO: every holder of the terminal's other side has closed it
    run.screen.append(buffer, static_cast<std::size_t>(n));
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!killed) run.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  termios modes{};
  if (::tcgetattr(master, &modes) == 0) run.local_modes_after = modes.c_lflag;
  ::close(master);
  return run;
}

TEST(Stdin, RankZeroReadsHvdrunsStdinAndTheOtherRanksReadNothing) {
  TempDir dir;
  const auto input = dir.path / "input";
  std::ofstream(input) << "first line\nsecond line\n";
  HvdrunProcess process({"-np", "3", "sh", "-c", "cat; echo \"$RANK done\""}, {}, input.string());
  const auto r = process.finish(seconds(30));
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<std::string> rank_zero;
  for (const auto& line : lines_of(r.out)) {
    if (line.starts_with("[0]")) rank_zero.push_back(line);
  }
  EXPECT_EQ(rank_zero, (std::vector<std::string>{"[0]<stdout>:first line",
                                                 "[0]<stdout>:second line", "[0]<stdout>:0 done"}))
      << r.out;
  EXPECT_EQ(lines_of(r.out).size(), 5u) << "ranks 1 and 2 print only their last line:\n" << r.out;
}

// In a terminal, rank 0 reads what is typed (pdb after breakpoint() does the same); a rank in
// a background process group of hvdrun's session would be stopped by SIGTTIN instead.
TEST(Stdin, RankZeroReadsTheTerminalHvdrunRunsIn) {
  const auto run =
      run_in_terminal({"-np", "2", "sh", "-c", "read line; echo \"got:[$line]\""}, "hello\n");
  EXPECT_EQ(run.status, 0) << run.screen;
  EXPECT_NE(run.screen.find("[0]<stdout>:got:[hello]"), std::string::npos) << run.screen;
  EXPECT_NE(run.screen.find("[1]<stdout>:got:[]"), std::string::npos) << run.screen;
}

// A rank that turns the terminal's echo off and is killed before it can turn it back on: the
// terminal has its echo again once hvdrun has ended.
TEST(Stdin, TheTerminalsModesComeBackAfterRankZero) {
  const auto run =
      run_in_terminal({"-np", "1", "sh", "-c",
                       "stty -echo && stty | grep -q -- -echo && echo echo-is-off; kill -KILL $$"},
                      "");
  EXPECT_EQ(run.status, 137) << run.screen;
  EXPECT_NE(run.screen.find("[0]<stdout>:echo-is-off"), std::string::npos) << run.screen;
  EXPECT_NE(run.local_modes_after & ECHO, 0u) << run.screen;
}

// `hvdrun ... &` in an interactive shell: what is typed belongs to the shell, not to rank 0.
TEST(Stdin, ABackgroundHvdrunLeavesTheTerminalsInputAlone) {
  const auto run = run_in_terminal({"-np", "1", "sh", "-c", "read line; echo \"got:[$line]\""},
                                   "hello\n", /*in_background=*/true);
  EXPECT_EQ(run.status, 0) << run.screen;
  EXPECT_NE(run.screen.find("[0]<stdout>:got:[]"), std::string::npos) << run.screen;
}

}  // namespace
}  // namespace hvdrun::itest
