// hvdrun's stdin reaches the worker of rank 0: a file or a pipe as it is, a terminal (a
// pseudo-terminal made by the test, hvdrun in its foreground as in a shell) through hvdrun,
// which does not read it in the background.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
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
};

// Runs hvdrun in a new pseudo-terminal, which is its controlling terminal, with hvdrun in the
// terminal's foreground (or in a process group of its own beside it, as `hvdrun ... &` in a
// shell, and with kBackgroundThenForeground put in the foreground after 1 s without a signal,
// as `fg` does for a running job). Types `typed` into it (once the screen shows `prompt`, if
// given) and reads the screen until hvdrun ends. With `then`, a shell runs hvdrun and then
// that command, in the same terminal.
enum class Place { kForeground, kBackground, kBackgroundThenForeground };
TerminalRun run_in_terminal(const std::vector<std::string>& args, const std::string& typed,
                            Place place = Place::kForeground, const std::string& prompt = "",
                            const std::string& then = "") {
  std::vector<std::string> argv{HVDRUN_BINARY};
  if (!then.empty()) argv = {"/bin/bash", "-c", "\"$0\" \"$@\"; " + then, HVDRUN_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> c_argv;
  for (auto& a : argv) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  if (pid < 0) throw std::runtime_error("forkpty failed");
  if (pid == 0) {
    if (place != Place::kForeground) {
      const pid_t job = ::fork();
      if (job > 0) {
        ::setpgid(job, job);  // before either side goes on
        if (place == Place::kBackgroundThenForeground) {
          ::sleep(1);
          ::tcsetpgrp(0, job);
        }
        int status = 0;
        ::waitpid(job, &status, 0);
        ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
      }
      if (job == 0) ::setpgid(0, 0);
    }
    ::execv(c_argv[0], c_argv.data());
    ::_exit(126);
  }
  TerminalRun run;
  bool typed_yet = false;
  const auto type = [&] {
    typed_yet = true;
    if (::write(master, typed.data(), typed.size()) != static_cast<ssize_t>(typed.size())) {
      ADD_FAILURE() << "cannot type into the terminal";
    }
  };
  if (prompt.empty()) type();
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
    if (!typed_yet && run.screen.find(prompt) != std::string::npos) type();
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!killed) run.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
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

TEST(Stdin, APipeReachesRankZero) {
  TempDir dir;
  const auto script = (dir.path / "job.sh").string();
  std::ofstream(script) << "printf 'piped\\n' | \"$1\" -np 2 sh -c 'cat; echo \"$RANK done\"'\n";
  const std::string command = "sh " + script + " " + HVDRUN_BINARY + " 2>/dev/null";
  FILE* out = ::popen(command.c_str(), "r");
  ASSERT_NE(out, nullptr);
  std::string text;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, out)) text += buffer;
  EXPECT_EQ(::pclose(out), 0) << text;
  std::vector<std::string> rank_zero;  // rank 1's line may come between them
  for (const auto& line : lines_of(text)) {
    if (line.starts_with("[0]")) rank_zero.push_back(line);
  }
  EXPECT_EQ(rank_zero, (std::vector<std::string>{"[0]<stdout>:piped", "[0]<stdout>:0 done"}))
      << text;
  EXPECT_EQ(lines_of(text).size(), 3u) << text;
}

// Rank 0 runs in a process group of its own: given the terminal, it would be stopped
// (SIGTTIN) by its first read, and the job would hang. hvdrun reads the terminal for it.
TEST(Stdin, ATerminalIsRelayedToRankZero) {
  const auto run =
      run_in_terminal({"-np", "2", "sh", "-c", "read line; echo \"got:[$line]\""}, "hello\n");
  EXPECT_EQ(run.status, 0) << run.screen;
  EXPECT_NE(run.screen.find("[0]<stdout>:got:[hello]"), std::string::npos) << run.screen;
  EXPECT_NE(run.screen.find("[1]<stdout>:got:[]"), std::string::npos) << run.screen;
}

// Ctrl-D at the start of a line ends rank 0's input.
TEST(Stdin, EndOfTerminalInputEndsRankZerosInput) {
  const auto run =
      run_in_terminal({"-np", "2", "sh", "-c", "cat; echo \"$RANK done\""}, "one\ntwo\n\x04");
  EXPECT_EQ(run.status, 0) << run.screen;
  std::vector<std::string> rank_zero;  // rank 1's line may come between them
  for (const auto& line : lines_of(run.screen)) {
    if (line.starts_with("[0]")) rank_zero.push_back(line);
  }
  EXPECT_EQ(rank_zero, (std::vector<std::string>{"[0]<stdout>:one\r", "[0]<stdout>:two\r",
                                                 "[0]<stdout>:0 done\r"}))
      << run.screen;
  EXPECT_NE(run.screen.find("[1]<stdout>:1 done"), std::string::npos) << run.screen;
}

// A prompt (a partial line of rank 0, which reads the terminal) shows before anything is
// typed; what rank 0 writes after the typed line is a line of its own.
TEST(Stdin, RankZerosPromptShowsBeforeItsLineEnds) {
  const auto run =
      run_in_terminal({"-np", "1", "sh", "-c", "printf 'name? '; read name; echo \"hi [$name]\""},
                      "bob\n", Place::kForeground, "[0]<stdout>:name? ");
  EXPECT_EQ(run.status, 0) << run.screen;
  EXPECT_NE(run.screen.find("[0]<stdout>:name? bob\r\n[0]<stdout>:hi [bob]\r\n"), std::string::npos)
      << run.screen;
}

// In the background hvdrun neither stops (a read of the terminal there would stop it) nor
// takes what is typed: rank 0 reads nothing.
TEST(Stdin, InTheBackgroundTheTerminalIsNotRead) {
  const auto run =
      run_in_terminal({"-np", "2", "bash", "-c", "read -t 2 line; echo \"got:[$line]\""}, "hello\n",
                      Place::kBackground);
  EXPECT_EQ(run.status, 0) << run.screen;
  EXPECT_NE(run.screen.find("[0]<stdout>:got:[]"), std::string::npos) << run.screen;
  EXPECT_NE(run.screen.find("[1]<stdout>:got:[]"), std::string::npos) << run.screen;
}

// A job started in the background and then given the foreground without a signal (`fg` of a
// running job) reads what was typed meanwhile.
TEST(Stdin, BroughtToTheForegroundTheTerminalIsRead) {
  const auto run = run_in_terminal({"-np", "1", "sh", "-c", "read line; echo \"got:[$line]\""},
                                   "hello\n", Place::kBackgroundThenForeground);
  EXPECT_EQ(run.status, 0) << run.screen;
  EXPECT_NE(run.screen.find("[0]<stdout>:got:[hello]"), std::string::npos) << run.screen;
}

// Once rank 0 has ended, what is typed is the shell's: hvdrun no longer reads the terminal.
// Rank 1 says when to type 2 s after rank 0 ended: time for hvdrun to see that end on a
// loaded machine under a sanitizer (before it, hvdrun still relays to rank 0).
TEST(Stdin, AfterRankZeroEndedTypingIsTheShells) {
  const auto run = run_in_terminal(
      {"-np", "2", "sh", "-c",
       "if [ $RANK = 1 ]; then sleep 2; echo '1 waiting'; sleep 1.5; fi; echo \"$RANK gone\""},
      "after\n", Place::kForeground, "[1]<stdout>:1 waiting", "read -t 5 x; echo \"left:[$x]\"");
  EXPECT_EQ(run.status, 0) << run.screen;
  EXPECT_NE(run.screen.find("left:[after]"), std::string::npos) << run.screen;
}

}  // namespace
}  // namespace hvdrun::itest
