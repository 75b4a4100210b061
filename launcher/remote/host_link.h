// HostLink: the thread that owns one host's SSH session. It connects (bounded by the start
// deadline), reports ready or failed, then runs the host's workers as RemoteCommands on one
// non-blocking event loop (socket + a wake-up eventfd), relaying their output and exits as
// RemoteEvents. Other threads talk to it only through start_workers/terminate (queued,
// thread-safe). Destruction closes the session (agents then kill their workers) and joins.
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <thread>
#include <variant>
#include <vector>

#include "common/unique_fd.h"
#include "launcher/remote/remote_spawn.h"
#include "launcher/ssh/ssh_socket.h"

namespace hvdrun::launcher::ssh {

class SshSession;

class HostLink {
 public:
  // `options` and `events` must outlive the link.
  HostLink(std::size_t index, RemoteHost host, const RemoteSpawnOptions& options,
           Clock::time_point deadline, const RemoteEvents& events);
  ~HostLink();
  HostLink(const HostLink&) = delete;
  HostLink& operator=(const HostLink&) = delete;

  void start_workers(std::vector<RemoteWorker> workers);
  void terminate(int id, int signo);
  // Asks the thread to close the session and end (no more events); does not wait.
  void request_stop();

 private:
  struct Start {
    std::vector<RemoteWorker> workers;
  };
  struct Signal {
    int id;  // -1: every worker of the host
    int signo;
  };
  using Command = std::variant<Start, Signal>;

  void push(Command command);
  void run();
  void serve(SshSession& session);
  void fail_queued(const std::string& message);
  bool stopping() const;

  const std::size_t index_;
  const RemoteHost host_;
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
