// The workers of this machine: fork/exec in their own process groups (process.h), watched by
// the orphan watchdog, their stdout/stderr pipes pumped into the OutputSink line by line, and
// reaped on SIGCHLD. Reports each exit through a callback. Lifetime: owned by the supervisor;
// io thread only.
#pragma once

#include <array>
#include <boost/asio.hpp>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "job_outcome.h"
#include "output.h"
#include "placement.h"
#include "process.h"
#include "watchdog.h"

namespace hvdrun::launcher {

class LocalWorkers {
 public:
  struct Callbacks {
    std::function<void(int rank, RankEnd end)> on_exit;
    std::function<void(int rank)> on_stream_closed;  // a pipe of `rank` reached EOF or closed
  };

  LocalWorkers(boost::asio::io_context& io, Watchdog& watchdog, OutputSink& sink,
               Callbacks callbacks);

  // Spawns one worker per (slot, environment) pair, all at once, and starts pumping.
  void spawn(const std::vector<std::string>& command, const std::vector<Slot>& slots,
             const std::vector<std::vector<std::string>>& environments, bool verbose);
  // Collects exits (call on SIGCHLD and after spawning). Within one pass, workers killed by
  // a signal the launcher did not send are reported first.
  void reap();
  // Signals every worker's process group that may still hold a process.
  void signal_all(int signo);
  std::size_t open_streams() const noexcept { return open_streams_; }
  // Whether a pipe of `rank` (a local rank) is still open.
  bool streams_open(int rank) const;
  std::size_t size() const noexcept { return workers_.size(); }
  // Every worker exited but a pipe stays open (held by a worker's child): kill the groups and
  // take what the pipes hold without waiting.
  void close_streams();

 private:
  struct Worker {
    Slot slot;
    Child child;
    std::optional<boost::asio::posix::stream_descriptor> out;
    std::optional<boost::asio::posix::stream_descriptor> err;
    bool exited = false;
    int exec_errno = 0;
    bool group_empty = false;  // kill(-pgid, 0) said ESRCH: never signal that id again
  };
  boost::asio::awaitable<void> pump(std::size_t index, StreamKind kind);
  void on_exit(Worker& w, ExitStatus status);
  void drop_streams(StreamKind kind);
  bool dropped(StreamKind kind) const { return dropped_[kind == StreamKind::kStderr ? 1 : 0]; }
  void forget_empty_groups();

  boost::asio::io_context& io_;
  Watchdog& watchdog_;
  OutputSink& sink_;
  Callbacks callbacks_;
  std::vector<Worker> workers_;
  std::string program_;
  std::size_t open_streams_ = 0;
  bool closing_streams_ = false;
  bool signalled_ = false;         // signal_all() sent a signal
  std::array<bool, 2> dropped_{};  // stdout, stderr: the console reader is gone
};

}  // namespace hvdrun::launcher
