// The workers of this machine, keyed by WorkerId: fork/exec in their own process groups
// (process.h), watched by the orphan watchdog, their stdout/stderr pipes pumped into the
// OutputSink a read at a time, and reaped on SIGCHLD. Reports each exit through a callback.
// Nothing here waits: a pump pauses while the console is paused (the worker then blocks on
// its full pipe), and a worker's exec report is read asynchronously; an exit is reported
// once its report is known, so "cannot run" is never mistaken for the program's status.
// Workers can be spawned at any time, in batches; each lives in stable storage that its pipe
// pumps point into. Lifetime: owned by WorkerPools; io thread only.
#pragma once

#include <signal.h>

#include <array>
#include <boost/asio.hpp>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/process_end.h"
#include "launcher/output/output.h"
#include "launcher/plan/placement.h"
#include "launcher/plan/worker_id.h"
#include "launcher/process/process.h"
#include "launcher/process/watchdog.h"
#include "launcher/workers/rank_zero_stdin.h"
#include "launcher/workers/worker_pool.h"

namespace hvdrun::launcher {

class LocalWorkers final : public WorkerPool {
 public:
  struct Callbacks {
    std::function<void(const WorkerId& worker, ProcessEnd end)> on_exit;
    std::function<void(const WorkerId& worker)> on_stream_closed;  // a pipe reached EOF or closed
  };

  using Launch = WorkerLaunch;

  // start() runs `command` (empty: only spawn() can start workers); `verbose` adds phase lines.
  // `rank_zero_stdin` (if given, outliving this) is the stdin of the worker of rank 0.
  LocalWorkers(boost::asio::io_context& io, Watchdog& watchdog, OutputSink& sink,
               Callbacks callbacks, std::vector<std::string> command = {}, bool verbose = false,
               RankZeroStdin* rank_zero_stdin = nullptr);

  // spawn(command, launches, verbose) with the command and verbosity given at construction,
  // then the exits that happened meanwhile.
  void start(std::vector<WorkerLaunch> launches) override;
  // Spawns the workers, all at once, and starts pumping their output (already registered
  // with the OutputSink). Each id must be new.
  void spawn(const std::vector<std::string>& command, std::vector<Launch> launches, bool verbose);
  // Collects exits (call on SIGCHLD and after spawning). Within one pass, workers killed by
  // a signal the launcher did not send are reported first.
  void reap();
  // Signals every worker's process group that may still hold a process.
  void signal_all(int signo) override;
  void signal(const WorkerId& worker, int signo) override;
  // The workers that have not ended, with their pids.
  std::vector<std::pair<WorkerId, pid_t>> running_pids() const;
  // SIGKILL to every group that may still hold a process (a worker's leftovers).
  void close() override { signal_all(SIGKILL); }
  std::size_t open_streams() const noexcept override { return open_streams_; }
  // Whether a pipe of `worker` is still open.
  bool streams_open(const WorkerId& worker) const override;
  std::size_t size() const noexcept { return workers_.size(); }
  // Every worker exited but a pipe stays open (held by a worker's child): kill the groups and
  // take what the pipes hold without waiting.
  void close_streams() override;

 private:
  struct Worker {
    WorkerId id;
    Slot slot;
    Child child;
    std::optional<boost::asio::posix::stream_descriptor> out;
    std::optional<boost::asio::posix::stream_descriptor> err;
    std::optional<boost::asio::posix::stream_descriptor> report;  // the exec report pipe
    bool exited = false;
    bool report_known = false;
    std::optional<ProcessEnd> held_exit;  // reaped before its exec report was read
    int exec_errno = 0;
    bool group_empty = false;  // kill(-pgid, 0) said ESRCH: never signal that id again
    // The worker reads the terminal: a partial line it leaves unfinished for kPromptDelay (a
    // prompt) is shown. Per stream; only for that worker.
    std::array<std::unique_ptr<boost::asio::steady_timer>, 2> prompt_timers;
  };
  boost::asio::awaitable<void> pump(Worker& w, StreamKind kind);
  boost::asio::awaitable<void> read_exec_report(Worker& w);
  void on_exit(Worker& w, ProcessEnd status);
  void report_exit(Worker& w, ProcessEnd status);
  void drop_streams(StreamKind kind);
  // After output of an interactive worker that left a partial line: show it if nothing follows
  // within kPromptDelay.
  void show_prompt_later(Worker& w, StreamKind kind);
  bool dropped(StreamKind kind) const { return dropped_[kind == StreamKind::kStderr ? 1 : 0]; }
  void forget_empty_groups();

  boost::asio::io_context& io_;
  Watchdog& watchdog_;
  OutputSink& sink_;
  Callbacks callbacks_;
  std::vector<std::string> command_;
  bool verbose_ = false;
  RankZeroStdin* rank_zero_stdin_ = nullptr;
  std::map<WorkerId, std::unique_ptr<Worker>> workers_;  // stable: pumps point into them
  std::string program_;
  std::size_t open_streams_ = 0;
  bool closing_streams_ = false;
  bool signalled_ = false;         // signal_all() sent SIGTERM or SIGKILL
  std::array<bool, 2> dropped_{};  // stdout, stderr: the console reader is gone
};

}  // namespace hvdrun::launcher
