// The test agent as a child process with piped stdio (agent_process.h).
#include "tests/remote/agent_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <stdexcept>
#include <thread>

#include "tests/support/proc_file.h"

namespace hvdrun::launcher::ssh::test {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

AgentProcess::AgentProcess() {
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) || ::pipe2(out, O_CLOEXEC) || ::pipe2(err, O_CLOEXEC)) {
    throw std::runtime_error("pipe2 failed");
  }
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execl(TEST_AGENT, TEST_AGENT, "--node-agent", static_cast<char*>(nullptr));
    ::_exit(126);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  in_ = in[1];
  out_fd_ = out[0];
  err_fd_ = err[0];
  ::signal(SIGPIPE, SIG_IGN);
}

AgentProcess::~AgentProcess() {
  for (int fd : {in_, out_fd_, err_fd_}) {
    if (fd >= 0) ::close(fd);
  }
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

void AgentProcess::write(const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::write(in_, bytes.data() + sent, bytes.size() - sent);
    if (n <= 0) return;
    sent += static_cast<std::size_t>(n);
  }
}

void AgentProcess::close_stdin() {
  if (in_ >= 0) ::close(in_);
  in_ = -1;
}

bool AgentProcess::pump(int timeout_ms) {
  pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
  if (::poll(fds, 2, timeout_ms) <= 0) return false;
  char buffer[65536];
  for (int i = 0; i < 2; ++i) {
    if (fds[i].revents == 0) continue;
    int& fd = i == 0 ? out_fd_ : err_fd_;
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) {
      ::close(fd);
      fd = -1;
    } else {
      (i == 0 ? out_ : err_).append(buffer, static_cast<std::size_t>(n));
    }
  }
  return true;
}

std::optional<agent::FromAgent> AgentProcess::next_frame(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (fed_ < out_.size()) {
      reader_.feed(std::string_view(out_).substr(fed_));
      fed_ = out_.size();
    }
    if (auto frame = reader_.next()) return frame;
    if (Clock::now() >= deadline || (out_fd_ < 0 && err_fd_ < 0)) return std::nullopt;
    pump(50);
  }
}

std::optional<int> AgentProcess::finish(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  if (!read_to_eof(timeout)) return std::nullopt;
  return wait_exit(std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()));
}

bool AgentProcess::read_to_eof(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (out_fd_ >= 0 || err_fd_ >= 0) {
    if (Clock::now() >= deadline) return false;
    pump(50);
  }
  return true;
}

std::optional<int> AgentProcess::wait_exit(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      return status;
    }
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return true;
  const std::string text = hvdrun::test::read_proc_file("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
}

bool wait_gone(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!process_gone(pid)) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace hvdrun::launcher::ssh::test
