// HostLink (host_link.h): the command queue, the stop, and the connect that hands a host's
// connection to the link loop.
#include "launcher/remote/host_link.h"

#include "launcher/remote/agents_log.h"
#include "launcher/remote/link_loop.h"
#include "launcher/ssh/ssh_error.h"

namespace hvdrun::launcher::remote {

using Clock = std::chrono::steady_clock;

HostLink::HostLink(std::size_t index, std::chrono::milliseconds start_timeout,
                   const RemoteEvents& events, LinkLoop& loop)
    : index_(index), start_timeout_(start_timeout), events_(events), loop_(loop) {}

void HostLink::request_stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  queued_.store(true, std::memory_order_release);
  canceller_.cancel();
  loop_.wake();
}

void HostLink::push(Command command) {
  {
    std::lock_guard lock(mutex_);
    commands_.push_back(std::move(command));
  }
  queued_.store(true, std::memory_order_release);
  loop_.wake();
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

void HostLink::end_job(int status, bool again) {
  push(JobEnd{status, again});
}

bool HostLink::stopping() const {
  std::lock_guard lock(mutex_);
  return stop_;
}

std::deque<HostLink::Command> HostLink::take_commands(bool& stop) {
  std::deque<Command> out;
  std::lock_guard lock(mutex_);
  queued_.store(false, std::memory_order_release);
  out.swap(commands_);
  stop = stop_;
  return out;
}

void HostLink::connect(const AgentConnector& connector) {
  deadline_ = Clock::now() + start_timeout_;
  if (stopping()) return loop_.adopt_failed(*this, "stopped before it connected");
  AgentConnection connection;
  const auto failed = [this](ssh::SshFailure failure, const std::string& message) {
    if (!stopping()) {
      agents_logger()->info("{}", message);  // the job reports it
      events_.on_host_failed({index_, failure, message});
    }
    loop_.adopt_failed(*this, message);
  };
  try {
    connection = connector(canceller_, deadline_);
  } catch (const ssh::SshError& e) {
    return failed(e.failure(), e.what());
  } catch (const Error& e) {
    return failed(ssh::SshFailure::kUnreachable, e.what());
  }
  connection.ready.host = index_;
  if (!stopping()) events_.on_host_ready(connection.ready);
  loop_.adopt(*this, std::move(connection.transport));
}

}  // namespace hvdrun::launcher::remote
