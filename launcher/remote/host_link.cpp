// HostLink's thread (host_link.h): connect, then one event loop over the session's socket and
// a wake-up eventfd that steps the host's node agent channel until nothing moves.
#include "launcher/remote/host_link.h"

#include <libssh2.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "launcher/remote/agent_channel.h"
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
    AgentChannel loop(session, options_, events_, deadline_, stopping);
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
      pollfd fds[2] = {
          {session.fd(),
           static_cast<short>(POLLIN |
                              ((directions & LIBSSH2_SESSION_BLOCK_OUTBOUND) ? POLLOUT : 0)),
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
