// HostLink: one host's connection to its node agent as the rest of the launcher sees it. It
// has no thread of its own: its connector runs on the spawner's bounded connect pool
// (connect()), and once connected the link loop (link_loop.h) serves it together with every
// other host's. Other threads talk to it through start_workers/terminate/request_stacks/
// end_job (queued, thread-safe) and request_stop; the link loop takes the queue.
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "launcher/remote/remote_spawn.h"
#include "launcher/ssh/ssh_socket.h"

namespace hvdrun::launcher::remote {

using Clock = std::chrono::steady_clock;

class LinkLoop;

class HostLink {
 public:
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
    bool again;  // the launcher runs again: the agent connects again
  };
  using Command = std::variant<Start, Signal, Stacks, JobEnd>;

  // `events` and `loop` must outlive the link. `start_timeout`: for the connect and the
  // workers' start, counted from when the connect begins.
  HostLink(std::size_t index, std::chrono::milliseconds start_timeout, const RemoteEvents& events,
           LinkLoop& loop);
  HostLink(const HostLink&) = delete;
  HostLink& operator=(const HostLink&) = delete;

  void start_workers(std::vector<RemoteWorker> workers);
  void terminate(int id, int signo);
  void request_stacks();
  // The job's exit status for the agent (sent before the link stops, if the link is up), or,
  // with `again`, that the launcher runs again on its port.
  void end_job(int status, bool again);
  // The link closes its connection (or gives up connecting) and reports nothing more; does not
  // wait (the spawner waits for its loop to let go of every link).
  void request_stop();

  // On a connect pool thread: connects, reports ready or failed, hands the connection to the
  // link loop. Nothing if the link was stopped before.
  void connect(const AgentConnector& connector);

  // For the link loop: the queued commands (and whether a stop was asked).
  std::deque<Command> take_commands(bool& stop);
  bool has_commands() const noexcept { return queued_.load(std::memory_order_acquire); }
  bool stopping() const;
  std::size_t index() const noexcept { return index_; }
  // The connect's start plus the start timeout (set by connect(), before the loop reads it).
  Clock::time_point deadline() const noexcept { return deadline_; }

 private:
  void push(Command command);

  const std::size_t index_;
  const std::chrono::milliseconds start_timeout_;
  Clock::time_point deadline_{};
  const RemoteEvents& events_;
  LinkLoop& loop_;
  ssh::SocketCanceller canceller_;
  mutable std::mutex mutex_;
  std::deque<Command> commands_;
  std::atomic<bool> queued_{false};
  bool stop_ = false;
};

}  // namespace hvdrun::launcher::remote
