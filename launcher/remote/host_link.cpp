// HostLink's thread (host_link.h): connect, then one event loop over the session's socket and
// a wake-up eventfd that steps every worker's RemoteCommand until nothing moves.
#include "launcher/remote/host_link.h"

#include <libssh2.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "launcher/agent/remote_agent.h"
#include "launcher/ssh/ssh_channel.h"
#include "launcher/ssh/ssh_log.h"
#include "launcher/ssh/ssh_session.h"

namespace hvdrun::launcher::ssh {
namespace {

constexpr int kPausedPollMs = 50;  // how often a paused link looks whether output may flow

// "10.213.0.11:22" -> "10.213.0.11"; "[fd00::1]:22" -> "fd00::1".
std::string address_without_port(const std::string& peer) {
  const auto colon = peer.rfind(':');
  std::string addr = colon == std::string::npos ? peer : peer.substr(0, colon);
  if (addr.size() > 2 && addr.front() == '[' && addr.back() == ']')
    addr = addr.substr(1, addr.size() - 2);
  return addr;
}

std::string ms_since(Clock::time_point start) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms",
                std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  return text;
}

// The workers of one connected host, on the link thread.
class HostLoop {
 public:
  HostLoop(SshSession& session, const RemoteSpawnOptions& options, const RemoteEvents& events,
           Clock::time_point deadline, const std::function<bool()>& stopping)
      : session_(session),
        options_(options),
        events_(events),
        deadline_(deadline),
        stopping_(stopping),
        command_(remote_agent_command(options.agent_path.empty() ? default_agent_path()
                                                                 : options.agent_path)) {}

  void add(std::vector<RemoteWorker> workers) {
    for (auto& worker : workers) {
      std::string input;
      try {
        input = encode_agent_spec({worker.cwd, std::move(worker.env), std::move(worker.argv)});
      } catch (const Error& e) {
        emit_exit(worker.id, ProcessEnd::failed_to_start(worker.label + " on " + session_.where() +
                                                         ": " + e.what()));
        continue;
      }
      entries_.push_back({worker.id, worker.label,
                          std::make_unique<RemoteCommand>(session_.get(), session_.where(),
                                                          command_, std::move(input)),
                          false, Clock::now()});
    }
  }

  void signal(int id, int signo) {
    const auto control = agent_control_for_signal(signo).value_or(AgentControl::kTerm);
    for (auto& entry : entries_) {
      if (id >= 0 && entry.id != id) continue;
      entry.command->write(encode_agent_control(control));
      // Killed: what its channel holds is read even while output is paused, so its end is seen.
      if (control == AgentControl::kKill) entry.command->drain_output();
    }
  }

  // Steps until a pass changes nothing; output is left unread while `paused`. Returns false
  // once the session has failed (every worker then has its exit reported).
  bool advance(bool paused) {
    bool progress = true;
    while (progress) {
      progress = false;
      bool may_open = true;
      for (auto& entry : entries_) {
        const bool mine = may_open;
        if (entry.command->state() == RemoteCommand::State::kOpening) may_open = false;
        progress |= entry.command->step(
            mine,
            [&](OutputStream stream, std::string_view bytes) {
              if (!stopping_()) events_.on_output(entry.id, stream, std::string(bytes));
            },
            !paused);
        if (entry.command->session_failed()) return fail_all(entry.command->result().message);
      }
      expire_unstarted();
      report();
    }
    return true;
  }

  int poll_timeout_ms(int keepalive_s) const {
    long ms = std::max(1, keepalive_s) * 1000L;
    for (const auto& entry : entries_) {
      if (!entry.command->started() && entry.command->state() != RemoteCommand::State::kDone) {
        const auto left =
            std::chrono::ceil<std::chrono::milliseconds>(start_deadline(entry) - Clock::now());
        ms = std::min<long>(ms, std::max<long>(0, left.count()));
      }
    }
    return static_cast<int>(ms);
  }

  const std::string& failure() const { return failure_; }

 private:
  struct Entry {
    int id;
    std::string label;
    std::unique_ptr<RemoteCommand> command;
    bool reported_started;
    Clock::time_point queued;
    bool reported_end = false;  // ended early: its output is still coming
  };

  void emit_exit(int id, ProcessEnd exit) {
    if (!stopping_()) events_.on_exit(id, std::move(exit), false);
  }

  // The last event of an entry: its end, or the end of its output if its end came early.
  void emit_last(const Entry& entry, ProcessEnd exit) {
    if (!entry.reported_end) return emit_exit(entry.id, std::move(exit));
    if (!stopping_()) events_.on_output_closed(entry.id);
  }

  // The first workers share the host's connect deadline; a worker queued later (an elastic
  // job's replacement) gets the start timeout from its queueing.
  Clock::time_point start_deadline(const Entry& entry) const {
    return std::max(deadline_, entry.queued + options_.start_timeout);
  }

  void expire_unstarted() {
    const auto now = Clock::now();
    const auto limit = std::chrono::duration_cast<std::chrono::seconds>(options_.start_timeout);
    for (auto& entry : entries_) {
      if (!entry.command->started() && now >= start_deadline(entry)) {
        entry.command->abandon(entry.label + " did not start on " + session_.where() + " within " +
                               std::to_string(limit.count()) + " s (--start-timeout)");
      }
    }
  }

  // Started and finished workers: their events, in that order; finished entries go away.
  void report() {
    for (auto it = entries_.begin(); it != entries_.end();) {
      RemoteCommand& command = *it->command;
      if (command.started() && !it->reported_started) {
        it->reported_started = true;
        ssh_logger()->info("{} started on {} in {}", it->label, session_.where(),
                           ms_since(it->queued));
        if (!stopping_()) events_.on_started(it->id);
      }
      if (!it->reported_end && command.state() != RemoteCommand::State::kDone) {
        if (const auto& end = command.early_end()) {
          ssh_logger()->debug("{} on {}: {}, output still coming", it->label, session_.where(),
                              end->describe());
          it->reported_end = true;
          if (!stopping_()) events_.on_exit(it->id, *end, true);
        }
      }
      if (command.state() == RemoteCommand::State::kDone) {
        ssh_logger()->debug("{} on {}: {}", it->label, session_.where(),
                            command.result().describe());
        emit_last(*it, command.early_end().value_or(command.result()));
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
  }

  bool fail_all(const std::string& message) {
    failure_ = message;
    if (!stopping_()) ssh_logger()->error("{}", message);
    for (auto& entry : entries_) {
      // An end the server reported before the connection broke is the real one.
      const auto& early = entry.command->early_end();
      emit_last(entry, early                      ? *early
                       : entry.command->started() ? ProcessEnd::lost_connection(message)
                                                  : ProcessEnd::failed_to_start(message));
    }
    entries_.clear();
    return false;
  }

  SshSession& session_;
  const RemoteSpawnOptions& options_;
  const RemoteEvents& events_;
  const Clock::time_point deadline_;
  const std::function<bool()>& stopping_;
  const std::string command_;
  std::vector<Entry> entries_;
  std::string failure_;
};

}  // namespace

HostLink::HostLink(std::size_t index, RemoteHost host, const RemoteSpawnOptions& options,
                   Clock::time_point deadline, const RemoteEvents& events)
    : index_(index),
      host_(std::move(host)),
      options_(options),
      deadline_(deadline),
      events_(events),
      wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      thread_([this] { run(); }) {}

HostLink::~HostLink() {
  request_stop();
  thread_.join();
}

void HostLink::request_stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  canceller_.cancel();
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(wake_.get(), &one, sizeof one);
}

void HostLink::push(Command command) {
  {
    std::lock_guard lock(mutex_);
    commands_.push_back(std::move(command));
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(wake_.get(), &one, sizeof one);
}

void HostLink::start_workers(std::vector<RemoteWorker> workers) {
  push(Start{std::move(workers)});
}

void HostLink::terminate(int id, int signo) {
  push(Signal{id, signo});
}

bool HostLink::stopping() const {
  std::lock_guard lock(mutex_);
  return stop_;
}

void HostLink::run() {
  const SshTarget target = resolve_target(host_.user, host_.name, options_.ssh);
  std::optional<SshSession> session;
  try {
    session.emplace(SshSession::connect(target, options_.ssh, deadline_, &canceller_));
  } catch (const SshError& e) {
    if (!stopping()) {
      ssh_logger()->info("{}", e.what());  // the job reports it
      events_.on_host_failed({index_, e.failure(), e.what()});
    }
    fail_queued(e.what());
    return;
  }
  ssh_logger()->info("{} as {}: {}", session->where(), target.user,
                     describe_phases(session->phases()));
  if (!session->host_key_note().empty()) ssh_logger()->warn("{}", session->host_key_note());
  if (!stopping()) {
    events_.on_host_ready({index_, session->where(), session->local_addr(),
                           address_without_port(session->peer()), target.user, session->phases(),
                           session->host_key_note()});
  }
  serve(*session);
}

void HostLink::serve(SshSession& session) {
  LIBSSH2_SESSION* s = session.get();
  libssh2_session_set_blocking(s, 0);
  const std::function<bool()> stopping = [this] { return this->stopping(); };
  std::string failure;
  {
    HostLoop loop(session, options_, events_, deadline_, stopping);
    for (;;) {
      std::deque<Command> commands;
      {
        std::lock_guard lock(mutex_);
        if (stop_) break;
        commands.swap(commands_);
      }
      for (auto& command : commands) {
        if (auto* start = std::get_if<Start>(&command)) {
          loop.add(std::move(start->workers));
        } else {
          const auto& sig = std::get<Signal>(command);
          loop.signal(sig.id, sig.signo);
        }
      }
      const bool paused = options_.output_paused && options_.output_paused();
      if (!loop.advance(paused)) {
        failure = loop.failure();
        break;
      }
      int next_keepalive = static_cast<int>(options_.ssh.keepalive.count());
      libssh2_keepalive_send(s, &next_keepalive);
      const int directions = libssh2_session_block_directions(s);
      // Paused: unread output keeps the socket readable, so look again after a while instead.
      const short in = paused ? 0 : POLLIN;
      pollfd fds[2] = {
          {session.fd(),
           static_cast<short>(in | ((directions & LIBSSH2_SESSION_BLOCK_OUTBOUND) ? POLLOUT : 0)),
           0},
          {wake_.get(), POLLIN, 0}};
      const int timeout = loop.poll_timeout_ms(next_keepalive);
      ::poll(fds, 2, paused ? std::min(timeout, kPausedPollMs) : timeout);
      std::uint64_t count;
      while (::read(wake_.get(), &count, sizeof count) > 0) {
      }
    }
    libssh2_session_set_blocking(s, 1);
    libssh2_session_set_timeout(s, 1000);
  }  // channels freed here, before the session
  if (!failure.empty()) fail_queued(failure);
}

// After the host failed: every worker queued now or later fails to start, until stop.
void HostLink::fail_queued(const std::string& message) {
  for (;;) {
    std::deque<Command> commands;
    {
      std::lock_guard lock(mutex_);
      if (stop_) return;
      commands.swap(commands_);
    }
    for (auto& command : commands) {
      if (auto* start = std::get_if<Start>(&command)) {
        for (const auto& worker : start->workers) {
          if (!stopping()) {
            events_.on_exit(worker.id, ProcessEnd::failed_to_start(message), false);
          }
        }
      }
    }
    pollfd p{wake_.get(), POLLIN, 0};
    ::poll(&p, 1, 60'000);
    std::uint64_t count;
    while (::read(wake_.get(), &count, sizeof count) > 0) {
    }
  }
}

}  // namespace hvdrun::launcher::ssh
