// HostLink's thread (host_link.h): connect, then one event loop over the agent's stream and a
// wake-up eventfd that steps the host's agent channel until nothing moves.
#include "launcher/remote/host_link.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <cstdint>

#include "launcher/remote/agent_channel.h"
#include "launcher/ssh/ssh_error.h"
#include "launcher/ssh/ssh_log.h"

namespace hvdrun::launcher::ssh {
namespace {

constexpr int kPausedPollMs = 50;  // how often a paused link looks whether output may flow

}  // namespace

HostLink::HostLink(std::size_t index, AgentConnector connect, const RemoteSpawnOptions& options,
                   Clock::time_point deadline, const RemoteEvents& events)
    : index_(index),
      connect_(std::move(connect)),
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

void HostLink::request_stacks() {
  push(Stacks{});
}

void HostLink::end_job(int status) {
  push(JobEnd{status});
}

bool HostLink::stopping() const {
  std::lock_guard lock(mutex_);
  return stop_;
}

void HostLink::run() {
  AgentConnection connection;
  const auto failed = [this](SshFailure failure, const std::string& message) {
    if (!stopping()) {
      ssh_logger()->info("{}", message);  // the job reports it
      events_.on_host_failed({index_, failure, message});
    }
    fail_queued(message);
  };
  try {
    connection = connect_(canceller_);
  } catch (const SshError& e) {
    return failed(e.failure(), e.what());
  } catch (const Error& e) {
    return failed(SshFailure::kUnreachable, e.what());
  }
  connection.ready.host = index_;
  if (!stopping()) events_.on_host_ready(connection.ready);
  serve(*connection.transport);
}

void HostLink::serve(AgentTransport& transport) {
  const std::function<bool()> stopping = [this] { return this->stopping(); };
  std::string failure;
  {
    AgentChannel loop(transport, options_, events_, deadline_, stopping);
    for (;;) {
      std::deque<Command> commands;
      bool stop = false;
      {
        std::lock_guard lock(mutex_);
        stop = stop_;
        commands.swap(commands_);
      }
      bool ending = false;
      for (auto& command : commands) {
        if (auto* start = std::get_if<Start>(&command)) {
          if (!stop) loop.add(std::move(start->workers));
        } else if (const auto* sig = std::get_if<Signal>(&command)) {
          loop.signal(sig->id, sig->signo);
        } else if (const auto* end = std::get_if<JobEnd>(&command)) {
          loop.end_job(end->status);
          ending = true;
        } else {
          loop.request_stacks();
        }
      }
      if (stop) {
        if (ending) loop.advance(false);  // the job's status goes out before the link closes
        break;
      }
      const bool paused = options_.output_paused && options_.output_paused();
      if (!loop.advance(paused)) {
        failure = loop.failure();
        break;
      }
      int timeout = loop.poll_timeout_ms(static_cast<int>(options_.ssh.keepalive.count()));
      pollfd fds[2] = {transport.poll_entry(timeout), {wake_.get(), POLLIN, 0}};
      ::poll(fds, 2, paused ? std::min(timeout, kPausedPollMs) : timeout);
      std::uint64_t count;
      while (::read(wake_.get(), &count, sizeof count) > 0) {
      }
    }
  }
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
