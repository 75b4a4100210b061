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
#include "launcher/process/process.h"
#include "launcher/process/signal_sender.h"
#include "launcher/stacks/python_hook.h"

extern char** environ;

namespace hvdrun::launcher::agent {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto kDrainAfterExit = 1s;  // output still held open by a worker's children
constexpr std::size_t kReadChunk = 64u << 10;
constexpr std::size_t kRestBound = 1u << 20;  // taken from a held pipe after the drain time
constexpr std::size_t kMaxCredit = 64u << 20;
constexpr int kBadLauncher = 2;

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

struct Worker {
  std::uint32_t id = 0;
  pid_t pid = -1;  // also its process group
  UniqueFd out, err;
  std::optional<int> status;  // wait status once reaped
  Clock::time_point drain_deadline{};
  bool discard = false;     // SIGKILLed by the launcher: its output is not wanted
  bool terminated = false;  // it has its SIGTERM (sent here, or by the scheduler): never twice
  bool early_end = false;   // its Exit went out with output still to come
};

// Signals a worker's process group, or the worker alone for a forwarded warning
// (signals_group()); never anything else (a worker that never ran has none).
void signal_group(const Worker& w, int signo) {
  if (w.pid > 0) ::kill(signals_group(signo) ? -w.pid : w.pid, signo);
}

class NodeAgent {
 public:
  NodeAgent(int in_fd, int out_fd, int err_fd, int sig_fd, sigset_t child_mask,
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

  AgentEnd run() {
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

 private:
  bool done() const {
    if (!shutting_down_) return false;
    if (give_up_ && Clock::now() >= *give_up_) return true;
    return std::all_of(workers_.begin(), workers_.end(),
                       [](const auto& entry) { return entry.second.status.has_value(); });
  }

  void note(const std::string& message) {
    write_all(err_fd_, "hvdrun node agent on " + host_ + ": " + message + "\n");
  }

  // The launcher is gone (EOF, a broken stream) or the agent was told to end: every worker is
  // signaled, then killed after the grace time.
  void begin_shutdown() {
    if (shutting_down_) return;
    shutting_down_ = true;
    in_open_ = false;
    for (auto& [id, w] : workers_) terminate(w);
    kill_deadline_ = Clock::now() + kKillGrace;
  }

  bool reading_output() const { return credit_ > 0 && !shutting_down_; }

  void poll_once() {
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
  void relay(Worker& w, bool err, std::size_t limit) {
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
    outbox_.output(w.id, err ? ssh::OutputStream::kStderr : ssh::OutputStream::kStdout,
                   std::string_view(buffer, static_cast<std::size_t>(n)));
  }

  // After the drain time: what a held pipe still has (bounded, beyond the credit: the worker
  // is over), then it is closed.
  void take_rest(Worker& w) {
    for (const bool err : {false, true}) {
      UniqueFd& fd = err ? w.err : w.out;
      char buffer[kReadChunk];
      for (std::size_t taken = 0; fd.valid() && taken < kRestBound;) {
        const long n = read_some(fd.get(), buffer, sizeof buffer);
        if (n <= 0) break;
        taken += static_cast<std::size_t>(n);
        if (!w.discard) {
          outbox_.output(w.id, err ? ssh::OutputStream::kStderr : ssh::OutputStream::kStdout,
                         std::string_view(buffer, static_cast<std::size_t>(n)));
        }
      }
      fd.reset();
    }
  }

  // A reaped worker's end goes out when its output is through; a failure goes out at once
  // when output still waits (the launcher must learn of it while its console is blocked),
  // followed by OutputClosed. Returns true once nothing more will be sent for it.
  bool advance(std::map<std::uint32_t, Worker>::iterator it) {
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

  void on_launcher_input() {
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

  // A worker that never ran: its message on its stderr, then its end (exit `code`).
  void never_ran(std::uint32_t id, const std::string& message, int code) {
    outbox_.output(id, ssh::OutputStream::kStderr, message + "\n");
    outbox_.flush();  // the message first, its end after it where the stream takes both
    Worker w;         // no process (pid -1): nothing is ever signaled
    w.id = id;
    w.status = code << 8;  // as waitpid reports exit(code)
    w.drain_deadline = Clock::now();
    workers_.emplace(id, std::move(w));
  }

  // Forks the worker now; its exec is checked in finish_spawns(), once the frames at hand are.
  void handle(SpawnFrame& f) {
    if (shutting_down_) return;
    if (terminate_noted_) {  // no worker starts once the agent has its SIGTERM: it would miss it
      return never_ran(f.id, "hvdrun node agent on " + host_ + ": not started: the agent is ending (SIGTERM)", 143);
    }
    if (workers_.contains(f.id) || forking_.contains(f.id)) {
      note("worker " + std::to_string(f.id) + " was already started; spawn ignored");
      return;
    }
    if (::chdir(f.spec.cwd.c_str()) != 0) {
      return never_ran(f.id,
                       "hvdrun node agent on " + host_ + ": cannot change to working directory '" +
                           f.spec.cwd + "': " + std::strerror(errno),
                       2);
    }
    try {
      forking_.emplace(
          f.id, Forked{f.spec.argv[0],
                       begin_agent_worker(
                           f.spec,
                           overlay_environment(base_env_,
                                               with_python_hook(with_host_interfaces(f.spec.env),
                                                                base_env_, hook_dir_.path())),
                           child_mask_)});
    } catch (const Error& e) {
      never_ran(f.id, std::string("hvdrun node agent on ") + host_ + ": " + e.what(), 2);
    }
  }

  // Every running worker's stacks, collected in the background (agent_stacks.h); a request
  // while one is under way is answered at once with a note per worker.
  void handle(StacksRequestFrame&) {
    std::vector<std::pair<std::uint32_t, pid_t>> running;
    for (const auto& [id, w] : workers_) {
      if (!w.status && w.pid > 0) running.emplace_back(id, w.pid);
    }
    if (running.empty() || stacks_.start(running)) return;
    for (const auto& [id, pid] : running) {
      outbox_.control(StacksFrame{id, static_cast<std::int32_t>(pid), "", "",
                                  "no stacks: a collection is under way on this host"});
    }
  }

  // The job's status: what this agent exits with once the launcher closes its connection; or
  // that the launcher runs again (the agent then connects again, unless a signal ended it).
  void handle(JobEndFrame& f) {
    exit_status_ = f.status;
    again_ = f.again && !signal_;
    told_ = true;
  }

  // Not taken: the reason on stderr, a non-zero status, nothing more from this launcher.
  void handle(RefusedFrame& f) {
    write_all(err_fd_, "hvdrun node agent: the launcher refused this node: " + f.reason + "\n");
    exit_status_ = kBadLauncher;
    told_ = true;
    begin_shutdown();
  }

  void send_stacks() {
    for (auto& frame : stacks_.take()) outbox_.control(std::move(frame));
  }

  // The workers forked from the frames at hand: each exec'd (Started) or not (127).
  void finish_spawns() {
    for (auto& [id, forked] : forking_) {
      AgentWorker started = finish_agent_worker(forked.spawned);
      if (started.exec_errno != 0) {
        int ignored = 0;
        while (::waitpid(started.pid, &ignored, 0) < 0 && errno == EINTR) {
        }
        never_ran(id, "cannot run '" + forked.program + "': " + std::strerror(started.exec_errno),
                  127);
        continue;
      }
      set_nonblocking(started.out.get());
      set_nonblocking(started.err.get());
      Worker w;
      w.id = id;
      w.pid = started.pid;
      w.out = std::move(started.out);
      w.err = std::move(started.err);
      by_pid_[w.pid] = id;
      outbox_.control(StartedFrame{id, static_cast<std::int32_t>(w.pid)});
      workers_.emplace(id, std::move(w));
    }
    if (!forking_.empty()) reap_workers();  // one that ended before it was known
    forking_.clear();
  }

  void handle(SignalFrame& f) {
    for (auto& [id, w] : workers_) {
      if (f.id != SignalFrame::kEveryWorker && static_cast<std::int32_t>(id) != f.id) continue;
      if (f.signo == SIGTERM) {
        terminate(w);
        continue;
      }
      if (!w.status) signal_group(w, f.signo);
      if (f.signo == SIGKILL) w.discard = true;  // the launcher wants it gone, output too
    }
  }

  // A worker's SIGTERM, once: a scheduler's, the launcher's and this agent's are one.
  static void terminate(Worker& w) {
    if (!w.status && !w.terminated) signal_group(w, SIGTERM);
    w.terminated = true;
  }

  // SIGTERM to the agent is a scheduler's (a preemption, a time limit, a pod's end): the
  // workers get it once (from here, unless Slurm's step daemon sent it to all of them), and
  // they and the agent go on through their grace period: their output is relayed to the end,
  // their ends reported. The launcher ends the job (its grace period, then SIGKILL), or its
  // connection closes.
  void on_terminate(pid_t sender) {
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

  void handle(CreditFrame& f) { credit_ = std::min(kMaxCredit, credit_ + f.bytes); }

  void on_signal() {
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
  void reap_workers() {
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

  const int in_fd_, err_fd_, sig_fd_;
  const sigset_t child_mask_;
  Outbox outbox_;
  const std::string host_;
  const std::vector<std::string> base_env_;
  PythonHookDir hook_dir_;  // before stacks_, which reads it
  AgentStacks stacks_{hook_dir_.path()};
  FrameReader<ToAgent> frames_;
  std::map<std::uint32_t, Worker> workers_;
  std::map<pid_t, std::uint32_t> by_pid_;
  struct Forked {
    std::string program;  // argv[0], for the message if its exec fails
    Spawned spawned;
  };
  std::map<std::uint32_t, Forked> forking_;  // forked from the frames at hand, exec unchecked
  std::size_t credit_ = kInitialCredit;
  bool in_open_ = true;
  bool shutting_down_ = false;
  int exit_status_ = 0;
  bool again_ = false;            // the launcher runs again: connect again
  bool told_ = false;             // a JobEnd or Refused came
  int signal_ = 0;                // the signal that ended the agent
  bool terminate_noted_ = false;  // a SIGTERM came: said once
  Clock::time_point next_heartbeat_{};
  std::optional<Clock::time_point> kill_deadline_;
  std::optional<Clock::time_point> give_up_;
};

}  // namespace

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
    return {kBadLauncher, false};
  }
  for (const int signo : {SIGCHLD, SIGTERM, SIGHUP, SIGINT, SIGUSR1, SIGUSR2}) {
    sigdelset(&old_mask, signo);
  }
  NodeAgent agent(in_fd, out_fd, err_fd, sig_fd.get(), old_mask, node);
  return agent.run();
}

}  // namespace hvdrun::launcher::agent
