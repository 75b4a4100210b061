// run_node_agent (node_agent.h): one poll loop over the launcher's stream, the workers' pipes,
// a signalfd (SIGCHLD, and the signals that end the agent) and the outgoing queue.
#include "launcher/agent/node_agent.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

#include "common/unique_fd.h"
#include "hvdrun/error.h"
#include "launcher/agent/agent_outbox.h"
#include "launcher/agent/agent_stacks.h"
#include "launcher/agent/agent_worker.h"
#include "launcher/agent/node_agent_loop.h"
#include "launcher/process/process.h"
#include "launcher/process/signal_sender.h"
#include "launcher/stacks/python_hook.h"

extern char** environ;

namespace hvdrun::launcher::agent {
namespace {

using Clock = std::chrono::steady_clock;

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown host";
  return name;
}

std::vector<std::string> own_environment() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) out.emplace_back(*e);
  return out;
}

void set_nonblocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

int ms_until(Clock::time_point when) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(when - Clock::now());
  return static_cast<int>(std::clamp<long>(left.count(), 0, 60'000));
}

}  // namespace

NodeAgent::NodeAgent(int in_fd, int out_fd, int err_fd, int sig_fd, sigset_t child_mask,
                     const std::string& node)
    : in_fd_(in_fd),
      err_fd_(err_fd),
      sig_fd_(sig_fd),
      child_mask_(child_mask),
      outbox_(out_fd),
      host_(this_host()),
      base_env_(own_environment()) {
  set_nonblocking(out_fd);
  outbox_.raw(std::string(kAgentPreamble));
  outbox_.control(
      HelloFrame{kAgentProtocolVersion, host_, static_cast<std::int32_t>(::getpid()), node});
}

AgentEnd NodeAgent::run() {
  next_heartbeat_ = Clock::now() + kHeartbeatInterval;
  while (!done()) {
    poll_once();
    const auto now = Clock::now();
    if (now >= next_heartbeat_ && !shutting_down_) {
      outbox_.control(HeartbeatFrame{});
      next_heartbeat_ = now + kHeartbeatInterval;
    }
    if (kill_deadline_ && now >= *kill_deadline_) {
      for (auto& [id, w] : workers_) {
        if (!w.status) signal_group(w, SIGKILL);
      }
      kill_deadline_.reset();
      give_up_ = now + kKillGrace;
    }
    for (auto it = workers_.begin(); it != workers_.end();) {
      it = advance(it) ? workers_.erase(it) : std::next(it);
    }
    if (!outbox_.flush()) begin_shutdown();
  }
  return {exit_status_, again_, told_, signal_};
}

bool NodeAgent::done() const {
  if (!shutting_down_) return false;
  if (give_up_ && Clock::now() >= *give_up_) return true;
  return std::all_of(workers_.begin(), workers_.end(),
                     [](const auto& entry) { return entry.second.status.has_value(); });
}

void NodeAgent::note(const std::string& message) {
  write_all(err_fd_, "hvdrun node agent on " + host_ + ": " + message + "\n");
}

// The launcher is gone (EOF, a broken stream) or the agent was told to end: every worker is
// signaled, then killed after the grace time.
void NodeAgent::begin_shutdown() {
  if (shutting_down_) return;
  shutting_down_ = true;
  in_open_ = false;
  for (auto& [id, w] : workers_) terminate(w);
  kill_deadline_ = Clock::now() + kKillGrace;
}

void NodeAgent::poll_once() {
  std::vector<pollfd> fds;
  std::vector<std::pair<Worker*, bool>> pipes;  // (worker, stderr?) per pipe entry
  fds.push_back({in_open_ ? in_fd_ : -1, POLLIN, 0});
  fds.push_back({sig_fd_, POLLIN, 0});
  fds.push_back({outbox_.wants_write() ? outbox_.fd() : -1, POLLOUT, 0});
  fds.push_back({stacks_.fd(), POLLIN, 0});
  auto deadline = next_heartbeat_;
  for (auto& [id, w] : workers_) {
    if (w.status && (w.out.valid() || w.err.valid())) {
      deadline = std::min(deadline, w.drain_deadline);
    }
    if (!reading_output() && !w.discard) continue;
    for (const bool err : {false, true}) {
      const UniqueFd& fd = err ? w.err : w.out;
      if (!fd.valid()) continue;
      fds.push_back({fd.get(), POLLIN, 0});
      pipes.emplace_back(&w, err);
    }
  }
  if (kill_deadline_) deadline = std::min(deadline, *kill_deadline_);
  if (give_up_) deadline = std::min(deadline, *give_up_);
  if (::poll(fds.data(), fds.size(), ms_until(deadline)) < 0) return;  // EINTR: loop again
  if (fds[0].revents != 0) on_launcher_input();
  if (fds[1].revents != 0) on_signal();
  if (fds[3].revents != 0) send_stacks();
  for (std::size_t i = 0; i < pipes.size(); ++i) {
    if (fds[4 + i].revents != 0) relay(*pipes[i].first, pipes[i].second, kReadChunk);
  }
}

// Reads up to `limit` bytes of a pipe into Output frames (within the credit, unless the
// output is discarded); closes it at EOF.
void NodeAgent::relay(Worker& w, bool err, std::size_t limit) {
  UniqueFd& fd = err ? w.err : w.out;
  char buffer[kReadChunk];
  const std::size_t want = std::min({limit, sizeof buffer, w.discard ? limit : credit_});
  if (want == 0) return;  // the credit went to another pipe in this round
  const long n = read_some(fd.get(), buffer, want);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
  if (n <= 0) {
    fd.reset();
    return;
  }
  if (w.discard) return;
  credit_ -= std::min(credit_, static_cast<std::size_t>(n));
  outbox_.output(w.id, err ? StreamKind::kStderr : StreamKind::kStdout,
                 std::string_view(buffer, static_cast<std::size_t>(n)));
}

// After the drain time: what a held pipe still has (bounded, beyond the credit: the worker
// is over), then it is closed.
void NodeAgent::take_rest(Worker& w) {
  for (const bool err : {false, true}) {
    UniqueFd& fd = err ? w.err : w.out;
    char buffer[kReadChunk];
    for (std::size_t taken = 0; fd.valid() && taken < kRestBound;) {
      const long n = read_some(fd.get(), buffer, sizeof buffer);
      if (n <= 0) break;
      taken += static_cast<std::size_t>(n);
      if (!w.discard) {
        outbox_.output(w.id, err ? StreamKind::kStderr : StreamKind::kStdout,
                       std::string_view(buffer, static_cast<std::size_t>(n)));
      }
    }
    fd.reset();
  }
}

// A reaped worker's end goes out when its output is through; a failure goes out at once
// when output still waits (the launcher must learn of it while its console is blocked),
// followed by OutputClosed. Returns true once nothing more will be sent for it.
bool NodeAgent::advance(std::map<std::uint32_t, Worker>::iterator it) {
  Worker& w = it->second;
  if (!w.status) return false;
  if ((w.out.valid() || w.err.valid()) && Clock::now() >= w.drain_deadline) take_rest(w);
  const bool through = !w.out.valid() && !w.err.valid() && outbox_.unsent(w.id) == 0;
  const ProcessEnd end = ProcessEnd::decode(*w.status);
  if (w.early_end) {
    if (!through) return false;
    outbox_.control(OutputClosedFrame{w.id});
    return true;
  }
  if (through) {
    signal_group(w, SIGKILL);  // what the worker left behind in its group
    outbox_.control(ExitFrame{w.id, end, false});
    return true;
  }
  if (!end.success()) {
    signal_group(w, SIGKILL);  // once its end is reported, nothing of it runs
    outbox_.control(ExitFrame{w.id, end, true});
    w.early_end = true;
  }
  return false;
}

void NodeAgent::on_launcher_input() {
  char buffer[kReadChunk];
  const long n = read_some(in_fd_, buffer, sizeof buffer);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) return begin_shutdown();
  frames_.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
  try {
    while (auto frame = frames_.next()) {
      // Other frames may name a worker being forked: its start is settled first.
      if (!std::holds_alternative<SpawnFrame>(*frame)) finish_spawns();
      std::visit([this](auto& f) { handle(f); }, *frame);
    }
    finish_spawns();
  } catch (const ProtocolError& e) {
    note(std::string("bad frame from the launcher: ") + e.what());
    exit_status_ = kBadLauncher;
    finish_spawns();  // those forked already are taken down with the others
    begin_shutdown();
  }
}

// SIGTERM to the agent is a scheduler's (a preemption, a time limit, a pod's end): the
// workers get it once (from here, unless Slurm's step daemon sent it to all of them), and
// they and the agent go on through their grace period: their output is relayed to the end,
// their ends reported. The launcher ends the job (its grace period, then SIGKILL), or its
// connection closes.
void NodeAgent::on_terminate(pid_t sender) {
  signal_ = SIGTERM;
  again_ = false;
  const bool scheduler = sent_by_step_daemon(sender);
  if (terminate_noted_) {
    // A second one (not Slurm's to every process again): now, as SIGINT does.
    if (scheduler) return;
    note("second SIGTERM: taking its workers down");
    return begin_shutdown();
  }
  terminate_noted_ = true;
  const std::string from =
      sender > 0 ? " from pid " + std::to_string(sender) + " (" + process_name(sender) + ")" : "";
  note("SIGTERM" + from + ": " +
       (scheduler ? std::string("its workers have it from the scheduler too")
                  : "passed to its workers") +
       "; relaying their output until they end or the launcher ends the job");
  for (auto& [id, w] : workers_) {
    if (scheduler) {
      w.terminated = true;
    } else {
      terminate(w);
    }
  }
}

void NodeAgent::on_signal() {
  signalfd_siginfo info;
  bool child = false;
  while (::read(sig_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    if (info.ssi_signo == SIGCHLD) {
      child = true;
    } else if (info.ssi_signo == SIGUSR1 || info.ssi_signo == SIGUSR2) {
      // A scheduler's warning sent to the agent's step (Slurm's --signal): to every worker.
      for (auto& [key, w] : workers_) {
        if (!w.status) signal_group(w, static_cast<int>(info.ssi_signo));
      }
    } else if (info.ssi_signo == SIGTERM) {
      on_terminate(static_cast<pid_t>(info.ssi_pid));
    } else {
      note("ending on " + signal_name(static_cast<int>(info.ssi_signo)) +
           ": taking its workers down");
      signal_ = static_cast<int>(info.ssi_signo);
      again_ = false;
      begin_shutdown();
    }
  }
  if (child) reap_workers();
}

// The workers only: the tools that collect stacks are children too, and reaped by their own
// runs (run_captured).
void NodeAgent::reap_workers() {
  for (auto found = by_pid_.begin(); found != by_pid_.end();) {
    int status = 0;
    if (::waitpid(found->first, &status, WNOHANG) != found->first) {
      ++found;
      continue;
    }
    const auto it = workers_.find(found->second);
    found = by_pid_.erase(found);
    if (it == workers_.end()) continue;
    it->second.status = status;
    it->second.drain_deadline = Clock::now() + kDrainAfterExit;
  }
}

AgentEnd run_node_agent(int in_fd, int out_fd, int err_fd, const std::string& node) {
  ::signal(SIGPIPE, SIG_IGN);
  sigset_t handled, old_mask;
  sigemptyset(&handled);
  for (const int signo : {SIGCHLD, SIGTERM, SIGHUP, SIGINT, SIGUSR1, SIGUSR2}) {
    sigaddset(&handled, signo);
  }
  ::sigprocmask(SIG_BLOCK, &handled, &old_mask);
  UniqueFd sig_fd(::signalfd(-1, &handled, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!sig_fd.valid()) {
    write_all(err_fd,
              std::string("hvdrun node agent: signalfd failed: ") + std::strerror(errno) + "\n");
    return {NodeAgent::kBadLauncher, false};
  }
  for (const int signo : {SIGCHLD, SIGTERM, SIGHUP, SIGINT, SIGUSR1, SIGUSR2}) {
    sigdelset(&old_mask, signo);
  }
  NodeAgent agent(in_fd, out_fd, err_fd, sig_fd.get(), old_mask, node);
  return agent.run();
}

}  // namespace hvdrun::launcher::agent
