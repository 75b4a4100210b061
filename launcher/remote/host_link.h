// HostLink: the thread that owns one host's connection to its node agent. It connects (the
// connector: an SSH session and channel, or the wait for the agent's own TCP connection;
// bounded by the start deadline), reports ready or failed, then runs the host's workers through
// its AgentChannel on one non-blocking event loop (the transport's descriptor + a wake-up
// eventfd), relaying their output and ends as RemoteEvents. Other threads talk to it only
// through start_workers/terminate (queued, thread-safe). Destruction closes the connection
// (the agent then kills its workers) and joins.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <variant>
#include <vector>

#include "common/unique_fd.h"
#include "launcher/remote/agent_transport.h"
#include "launcher/remote/remote_spawn.h"
#include "launcher/ssh/ssh_socket.h"

namespace hvdrun::launcher::ssh {

class HostLink {
 public:
  // `options` and `events` must outlive the link.
  HostLink(std::size_t index, AgentConnector connect, const RemoteSpawnOptions& options,
           Clock::time_point deadline, const RemoteEvents& events);
  ~HostLink();
  HostLink(const HostLink&) = delete;
  HostLink& operator=(const HostLink&) = delete;

  void start_workers(std::vector<RemoteWorker> workers);
  void terminate(int id, int signo);
  void request_stacks();
  // The job's exit status for the agent (sent before the link stops, if the link is up).
  void end_job(int status);
  // Asks the thread to close the connection and end (no more events); does not wait.
  void request_stop();

 private:
  struct Start {
    std::vector<RemoteWorker> workers;
  };
  struct Signal {
    int id;  // -1: every worker of the host
    int signo;
  };
  struct Stacks {};
  struct JobEnd {
    int status;
  };
  using Command = std::variant<Start, Signal, Stacks, JobEnd>;

  void push(Command command);
  void run();
  void serve(AgentTransport& transport);
  void fail_queued(const std::string& message);
  bool stopping() const;

  const std::size_t index_;
  const AgentConnector connect_;
  const RemoteSpawnOptions& options_;
  const Clock::time_point deadline_;
  const RemoteEvents& events_;
  SocketCanceller canceller_;
  UniqueFd wake_;  // eventfd: commands queued or stop requested
  mutable std::mutex mutex_;
  std::deque<Command> commands_;
  bool stop_ = false;
  std::thread thread_;  // last: started when everything above exists
};

}  // namespace hvdrun::launcher::ssh
