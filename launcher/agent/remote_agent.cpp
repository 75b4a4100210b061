// run_remote_agent (remote_agent.h): read the spec from stdin, start the worker, relay its
// output, obey control messages, and end as the worker ended. Single-threaded; SIGCHLD via a
// signalfd.
#include "launcher/agent/remote_agent.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include "common/unique_fd.h"
#include "hvdrun/error.h"
#include "launcher/agent/agent_worker.h"

extern char** environ;

namespace hvdrun::launcher::ssh {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto kSpecTimeout = 30s;    // the launcher writes the spec right after exec
constexpr auto kKillGrace = 1s;       // SIGTERM -> SIGKILL when the launcher is gone
constexpr auto kDrainAfterExit = 1s;  // output still held open by the worker's children
constexpr int kAgentFailure = 2;
constexpr int kCannotRun = 127;

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown host";
  return name;
}

void report(int err_fd, const std::string& message) {
  write_all(err_fd, "hvdrun remote agent on " + this_host() + ": " + message + "\n");
}

int poll_ms(Clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<long>(0, std::min<long>(left.count(), 60'000)));
}

// Reads exactly `size` bytes before `deadline`; throws ProtocolError / TimeoutError.
std::string read_exact(int fd, std::size_t size, Clock::time_point deadline) {
  std::string out(size, '\0');
  std::size_t got = 0;
  while (got < size) {
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, poll_ms(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) throw TimeoutError("no spec on stdin within 30 s");
    const long n = read_some(fd, out.data() + got, size - got);
    if (n < 0) throw ProtocolError(std::string("reading the spec: ") + std::strerror(errno));
    if (n == 0) {
      throw ProtocolError("stdin closed after " + std::to_string(got) + " of " +
                          std::to_string(size) + " bytes of the spec");
    }
    got += static_cast<std::size_t>(n);
  }
  return out;
}

AgentSpec read_spec(int in_fd) {
  const auto deadline = Clock::now() + kSpecTimeout;
  const std::size_t size = decode_agent_header(read_exact(in_fd, kAgentHeaderSize, deadline));
  return decode_agent_payload(read_exact(in_fd, size, deadline));
}

std::vector<std::string> own_environment() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) out.emplace_back(*e);
  return out;
}

[[noreturn]] void die_by_signal(int signo) {
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);  // the worker may have dumped core; the agent must not
  ::signal(signo, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signo);
  ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(signo);
  ::_exit(128 + signo);  // a signal whose default action does not terminate
}

// The relay loop: one worker, its two pipes, the control channel and SIGCHLD. Output is
// written without blocking: while a stream's bytes wait for the channel (the launcher paused
// reading it), that pipe of the worker is not read (back-pressure), and control messages and
// the worker's exit are still handled.
class Relay {
 public:
  Relay(AgentWorker worker, int in_fd, int out_fd, int err_fd, int sig_fd)
      : worker_(std::move(worker)), in_fd_(in_fd), sig_fd_(sig_fd) {
    out_.fd = out_fd;
    err_.fd = err_fd;
    for (const int fd : {out_fd, err_fd}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }

  // Runs until the worker is reaped and its output drained; returns its wait status. If the
  // worker failed while its output waits for the channel (the launcher is not reading it), a
  // child of the agent relays the rest and exits 0 when done, and this returns at once: the
  // SSH server reports the agent's end (the worker's) when the agent exits, so the launcher
  // learns of the failure without taking the output first.
  int run() {
    while (!finished()) {
      if (kill_deadline_ && Clock::now() >= *kill_deadline_) {
        ::kill(-worker_.pid, SIGKILL);
        kill_deadline_.reset();
      }
      poll_once();
      if (failed_with_output_waiting() && hand_over_output()) return *status_;
    }
    if (relay_child_) ::_exit(0);   // the group was killed before the hand-over
    ::kill(-worker_.pid, SIGKILL);  // whatever the worker left behind in its group
    return *status_;
  }

 private:
  // One output stream: the channel's descriptor and the bytes not yet written to it.
  struct Output {
    int fd = -1;
    std::string pending;
    bool dead = false;  // the channel is closed (EPIPE): output is dropped
  };

  bool failed_with_output_waiting() const {
    if (!status_ || handed_over_) return false;
    const bool failed = !WIFEXITED(*status_) || WEXITSTATUS(*status_) != 0;
    return failed && (!out_.pending.empty() || !err_.pending.empty());
  }

  // Forks the child that goes on relaying; true in the parent once it did. What is left of
  // the worker's process group is killed first: once its end is reported, nothing of it runs
  // (a restart may start the next worker here at once); the child takes what the pipes hold.
  // If fork fails, this process goes on relaying and reports the end after the output, as it
  // would anyway.
  bool hand_over_output() {
    handed_over_ = true;  // tried once, whatever came of it
    ::kill(-worker_.pid, SIGKILL);
    const pid_t pid = ::fork();
    if (pid == 0) relay_child_ = true;
    return pid > 0;
  }

  bool finished() const {
    if (!status_) return false;
    const bool pipes_done =
        (!worker_.out.valid() && !worker_.err.valid()) || Clock::now() >= drain_deadline_;
    return pipes_done && out_.pending.empty() && err_.pending.empty();
  }

  void poll_once() {
    // A pipe is read only while its stream has nothing waiting.
    pollfd fds[6] = {{in_open_ ? in_fd_ : -1, POLLIN, 0},
                     {out_.pending.empty() ? worker_.out.get() : -1, POLLIN, 0},
                     {err_.pending.empty() ? worker_.err.get() : -1, POLLIN, 0},
                     {status_ ? -1 : sig_fd_, POLLIN, 0},
                     {out_.pending.empty() ? -1 : out_.fd, POLLOUT, 0},
                     {err_.pending.empty() ? -1 : err_.fd, POLLOUT, 0}};
    auto deadline = Clock::now() + 60s;
    if (kill_deadline_) deadline = std::min(deadline, *kill_deadline_);
    if (status_ && (worker_.out.valid() || worker_.err.valid())) {
      deadline = std::min(deadline, drain_deadline_);
    }
    if (::poll(fds, 6, poll_ms(deadline)) < 0) return;  // EINTR: loop again
    if (fds[0].revents != 0) on_control();
    if (fds[1].revents != 0) relay(worker_.out, out_);
    if (fds[2].revents != 0) relay(worker_.err, err_);
    if (fds[3].revents != 0) on_sigchld();
    if (fds[4].revents != 0) flush(out_);
    if (fds[5].revents != 0) flush(err_);
    if (status_ && Clock::now() >= drain_deadline_) {  // pipes held open by the worker's children
      take_rest(worker_.out, out_);
      take_rest(worker_.err, err_);
    }
  }

  // Takes what a pipe still holds (bounded: its writers are the worker's leftovers) into the
  // pending output, then closes it.
  static void take_rest(UniqueFd& from, Output& to) {
    char buffer[65536];
    if (from.valid()) ::fcntl(from.get(), F_SETFL, O_NONBLOCK);
    for (int i = 0; from.valid() && i < 16; ++i) {
      const long n = ::read(from.get(), buffer, sizeof buffer);
      if (n <= 0) break;
      if (!to.dead) to.pending.append(buffer, static_cast<std::size_t>(n));
    }
    from.reset();
    flush(to);
  }

  void relay(UniqueFd& from, Output& to) {
    char buffer[65536];
    const long n = read_some(from.get(), buffer, sizeof buffer);
    if (n <= 0) {
      from.reset();
      return;
    }
    if (!to.dead) to.pending.append(buffer, static_cast<std::size_t>(n));
    flush(to);
  }

  // Writes what the channel takes now. A closed channel (EPIPE) loses only output; the worker
  // keeps being supervised.
  static void flush(Output& to) {
    while (!to.pending.empty()) {
      const ssize_t n = ::write(to.fd, to.pending.data(), to.pending.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n <= 0) {
        to.dead = true;
        to.pending.clear();
        return;
      }
      to.pending.erase(0, static_cast<std::size_t>(n));
    }
  }

  void on_control() {
    char buffer[256];
    const long n = read_some(in_fd_, buffer, sizeof buffer);
    if (n <= 0) {  // the launcher closed the channel or died: take the worker down
      in_open_ = false;
      if (!status_) {
        ::kill(-worker_.pid, SIGTERM);
        kill_deadline_ = Clock::now() + kKillGrace;
      }
      return;
    }
    pending_.append(buffer, static_cast<std::size_t>(n));
    while (pending_.size() >= kAgentControlSize) {
      const auto control = decode_agent_control(pending_.substr(0, kAgentControlSize));
      pending_.erase(0, kAgentControlSize);
      if (!control) {
        if (!err_.dead) {
          err_.pending +=
              "hvdrun remote agent on " + this_host() + ": ignoring an unknown control message\n";
        }
        flush(err_);
        continue;
      }
      const int signo = *control == AgentControl::kKill  ? SIGKILL
                        : *control == AgentControl::kInt ? SIGINT
                                                         : SIGTERM;
      if (!status_) ::kill(-worker_.pid, signo);
      if (signo == SIGKILL) {  // the launcher wants this worker gone now: its output too
        for (Output* out : {&out_, &err_}) {
          out->dead = true;
          out->pending.clear();
        }
      }
    }
  }

  void on_sigchld() {
    signalfd_siginfo info;
    while (::read(sig_fd_, &info, sizeof info) > 0) {
    }
    int wait_status = 0;
    pid_t r;
    do {
      r = ::waitpid(worker_.pid, &wait_status, WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == worker_.pid) {
      status_ = wait_status;
      drain_deadline_ = Clock::now() + kDrainAfterExit;
      kill_deadline_.reset();
    }
  }

  AgentWorker worker_;
  int in_fd_, sig_fd_;
  Output out_;
  Output err_;
  bool in_open_ = true;
  std::string pending_;
  std::optional<int> status_;
  bool handed_over_ = false;  // hand_over_output() was tried
  bool relay_child_ = false;  // this is the child it forked
  std::optional<Clock::time_point> kill_deadline_;
  Clock::time_point drain_deadline_{};
};

int finish(int wait_status) {
  if (WIFSIGNALED(wait_status)) die_by_signal(WTERMSIG(wait_status));
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : kAgentFailure;
}

}  // namespace

int run_remote_agent(int in_fd, int out_fd, int err_fd) {
  AgentSpec spec;
  try {
    spec = read_spec(in_fd);
  } catch (const Error& e) {
    report(err_fd, std::string("bad spec from the launcher: ") + e.what());
    return kAgentFailure;
  }
  if (::chdir(spec.cwd.c_str()) != 0) {
    report(err_fd,
           "cannot change to working directory '" + spec.cwd + "': " + std::strerror(errno));
    return kAgentFailure;
  }
  ::signal(SIGPIPE, SIG_IGN);
  sigset_t old_mask, chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &chld, &old_mask);
  UniqueFd sig_fd(::signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!sig_fd.valid()) {
    report(err_fd, std::string("signalfd failed: ") + std::strerror(errno));
    return kAgentFailure;
  }
  sigdelset(&old_mask, SIGCHLD);
  AgentWorker worker;
  try {
    worker = start_agent_worker(
        spec, overlay_environment(own_environment(), with_host_interfaces(spec.env)), old_mask);
  } catch (const Error& e) {
    report(err_fd, e.what());
    return kAgentFailure;
  }
  if (worker.exec_errno != 0) {
    write_all(err_fd,
              "cannot run '" + spec.argv[0] + "': " + std::strerror(worker.exec_errno) + "\n");
    int ignored = 0;
    while (::waitpid(worker.pid, &ignored, 0) < 0 && errno == EINTR) {
    }
    return kCannotRun;
  }
  Relay relay(std::move(worker), in_fd, out_fd, err_fd, sig_fd.get());
  return finish(relay.run());
}

}  // namespace hvdrun::launcher::ssh
