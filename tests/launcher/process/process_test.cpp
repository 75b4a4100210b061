// Spawner and wait-status decoding on real child processes.
#include "launcher/process/process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <chrono>
#include <string>

namespace hvdrun::launcher {
namespace {

std::vector<std::string> base_env() {
  return {"PATH=/usr/bin:/bin"};
}

std::string read_until_eof(const UniqueFd& fd) {
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd.get(), buffer, sizeof buffer)) > 0)
    text.append(buffer, static_cast<std::size_t>(n));
  return text;
}

TEST(ProcessEnd, DecodesExitAndSignalStatuses) {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(3);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_EQ(ProcessEnd::decode(status), ProcessEnd::exited(3));
  EXPECT_EQ(ProcessEnd::decode(status).shell_code(), 3);
  EXPECT_EQ(ProcessEnd::decode(status).describe(), "exit code 3");

  pid = ::fork();
  if (pid == 0) {
    ::signal(SIGSEGV, SIG_DFL);
    ::raise(SIGSEGV);
    ::_exit(0);
  }
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ProcessEnd decoded = ProcessEnd::decode(status);
  EXPECT_EQ(decoded, ProcessEnd::signaled(SIGSEGV));
  EXPECT_FALSE(decoded.success());
  EXPECT_EQ(decoded.shell_code(), 128 + SIGSEGV);
  EXPECT_EQ(decoded.describe(), "killed by signal SIGSEGV (11)");
  EXPECT_TRUE(ProcessEnd::exited(0).success());
}

TEST(Spawn, RunsBinTrueFromThePath) {
  Spawned s = spawn({"true"}, base_env());
  EXPECT_EQ(exec_error(s), 0);
  EXPECT_EQ(s.child.wait(), ProcessEnd::exited(0));
}

TEST(Spawn, CapturesStdoutAndStderrSeparately) {
  Spawned s = spawn({"/bin/sh", "-c", "echo out; echo err >&2; exit 4"}, base_env());
  EXPECT_EQ(exec_error(s), 0);
  EXPECT_EQ(read_until_eof(s.out), "out\n");
  EXPECT_EQ(read_until_eof(s.err), "err\n");
  EXPECT_EQ(s.child.wait(), ProcessEnd::exited(4));
}

TEST(Spawn, PassesExactlyTheGivenEnvironmentAndNullStdin) {
  Spawned s = spawn({"/bin/sh", "-c", "echo \"$HVDRUN_TEST_VALUE\"; cat; env | wc -l"},
                    {"HVDRUN_TEST_VALUE=42", "PATH=/usr/bin:/bin"});
  EXPECT_EQ(exec_error(s), 0);
  std::string out = read_until_eof(s.out);
  EXPECT_EQ(out.substr(0, 3), "42\n");  // then nothing from stdin, then the env count
  EXPECT_LE(std::stoi(out.substr(3)), 4);
  EXPECT_EQ(s.child.wait(), ProcessEnd::exited(0));
}

TEST(Spawn, MissingProgramReportsEnoentAndExits127) {
  Spawned s = spawn({"hvdrun-no-such-program"}, base_env());
  EXPECT_EQ(exec_error(s), ENOENT);
  EXPECT_EQ(s.child.wait(), ProcessEnd::exited(127));
  Spawned t = spawn({"/nonexistent/prog"}, base_env());
  EXPECT_EQ(exec_error(t), ENOENT);
  EXPECT_EQ(t.child.wait().shell_code(), 127);
}

TEST(Spawn, ChildLeadsItsOwnProcessGroupAndGetsNoExtraFds) {
  int leaked = ::dup(1);  // not close-on-exec in this process
  ASSERT_GE(leaked, 3);
  Spawned s =
      spawn({"/bin/sh", "-c", "cut -d' ' -f5 /proc/$$/stat; ls /proc/self/fd | wc -l"}, base_env());
  ::close(leaked);
  EXPECT_EQ(exec_error(s), 0);
  std::string out = read_until_eof(s.out);
  EXPECT_EQ(s.child.wait(), ProcessEnd::exited(0));
  ASSERT_NE(out.find('\n'), std::string::npos) << out;
  EXPECT_EQ(std::stoi(out), s.child.pid()) << out;
  EXPECT_NE(s.child.pid(), ::getpgrp());
  // 0, 1, 2 and the fd `ls` opens for /proc/self/fd: nothing inherited.
  EXPECT_EQ(std::stoi(out.substr(out.find('\n') + 1)), 4) << out;
}

// The given stdin, even the caller's own fd 0 when it is close-on-exec.
TEST(Spawn, GivenStdin) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  ASSERT_EQ(write_all(write_end.get(), "typed\n"), 0);
  write_end.reset();
  SpawnOptions options;
  options.stdin_fd = read_end.get();
  Spawned s = spawn({"/bin/sh", "-c", "cat"}, base_env(), options);
  EXPECT_EQ(exec_error(s), 0);
  EXPECT_EQ(read_until_eof(s.out), "typed\n");
  EXPECT_EQ(s.child.wait(), ProcessEnd::exited(0));

  // fd 0 itself, made close-on-exec: dup2(0, 0) would leave it so, and the child would read
  // a closed stdin.
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  UniqueFd second_read(fds[0]), second_write(fds[1]);
  ASSERT_EQ(write_all(second_write.get(), "from fd 0\n"), 0);
  second_write.reset();
  UniqueFd saved_stdin(::fcntl(0, F_DUPFD_CLOEXEC, 3));
  ASSERT_TRUE(saved_stdin.valid());
  ASSERT_EQ(::dup3(second_read.get(), 0, O_CLOEXEC), 0);
  options.stdin_fd = 0;
  Spawned t = spawn({"/bin/sh", "-c", "cat"}, base_env(), options);
  ::dup2(saved_stdin.get(), 0);
  EXPECT_EQ(exec_error(t), 0);
  EXPECT_EQ(read_until_eof(t.out), "from fd 0\n");
  EXPECT_EQ(t.child.wait(), ProcessEnd::exited(0));
}

TEST(Spawn, SignalsAreUnblockedAndDefaultInTheChild) {
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  ::sigprocmask(SIG_BLOCK, &block, &old);
  auto previous = ::signal(SIGINT, SIG_IGN);
  Spawned s = spawn({"/bin/sh", "-c", "kill -INT $$; sleep 5"}, base_env());
  ::signal(SIGINT, previous);
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  EXPECT_EQ(exec_error(s), 0);
  EXPECT_EQ(s.child.wait(), ProcessEnd::signaled(SIGINT));
}

// A signal sent to a child's group the moment spawn() returns can reach the child before it
// has reset its handlers. The launcher's handler (Asio's, which writes the signal's number to
// a pipe the child shares until exec) must not run there: the launcher would take the
// child's SIGTERM for its own.
TEST(Spawn, ASignalToAJustSpawnedChildNeverReachesTheParentsHandler) {
  boost::asio::io_context io;
  boost::asio::signal_set signals(io, SIGTERM);
  int caught = 0;
  signals.async_wait([&](const boost::system::error_code& ec, int) { caught += ec ? 0 : 1; });
  for (int i = 0; i < 200; ++i) {
    Spawned s = spawn({"/bin/true"}, base_env());
    s.child.signal_group(SIGTERM);
    const ProcessEnd end = s.child.wait();
    EXPECT_TRUE(end == ProcessEnd::signaled(SIGTERM) || end == ProcessEnd::exited(0))
        << end.describe();
  }
  io.run_for(std::chrono::milliseconds(100));
  EXPECT_EQ(caught, 0) << "a child's SIGTERM was delivered to the parent's signal_set";
}

TEST(Child, DestroyingAnUnreapedChildKillsItsGroup) {
  pid_t pid;
  {
    Spawned s = spawn({"/bin/sleep", "30"}, base_env());
    EXPECT_EQ(exec_error(s), 0);
    pid = s.child.pid();
    EXPECT_EQ(::kill(pid, 0), 0);
  }
  EXPECT_EQ(::kill(pid, 0), -1);  // killed and reaped: no zombie left
  EXPECT_EQ(errno, ESRCH);
}

TEST(Child, TryReapReturnsNothingWhileRunning) {
  Spawned s = spawn({"/bin/sleep", "30"}, base_env());
  EXPECT_EQ(exec_error(s), 0);
  EXPECT_FALSE(s.child.try_reap().has_value());
  EXPECT_EQ(s.child.signal_group(SIGTERM), 0);
  EXPECT_EQ(s.child.wait(), ProcessEnd::signaled(SIGTERM));
}

TEST(ProcessEnd, RemoteEndsDescribeThemselvesAndMapToShellCodes) {
  EXPECT_EQ(ProcessEnd::failed_to_start("host b: no route").shell_code(), 255);
  EXPECT_EQ(ProcessEnd::failed_to_start("host b: no route").describe(), "host b: no route");
  EXPECT_EQ(ProcessEnd::lost_connection("host b: reset").what_happened(), "failed: host b: reset");
  const ProcessEnd unnamed{ProcessEnd::Kind::kSignaled, 0, "WEIRD"};
  EXPECT_EQ(unnamed.shell_code(), 255);
  EXPECT_EQ(unnamed.describe(), "killed by signal SIGWEIRD");
  EXPECT_EQ(ProcessEnd::signaled(SIGKILL).shell_code(), 128 + SIGKILL);
  EXPECT_EQ(ProcessEnd::exited(2, "cannot run 'x'").describe(), "exit code 2 (cannot run 'x')");
  EXPECT_FALSE(ProcessEnd::lost_connection("x").ran());
  EXPECT_TRUE(ProcessEnd::signaled(SIGTERM).ran());
}

}  // namespace
}  // namespace hvdrun::launcher

namespace hvdrun::launcher {
namespace {

TEST(ShellCommandLine, QuotesOnlyWhereNeeded) {
  EXPECT_EQ(shell_command_line({"python3", "-c", "import os; print(os.environ['RANK'])"}),
            "python3 -c 'import os; print(os.environ['\\''RANK'\\''])'");
  EXPECT_EQ(shell_command_line({"./train", "--lr=0.1", ""}), "./train --lr=0.1 ''");
}

}  // namespace
}  // namespace hvdrun::launcher
