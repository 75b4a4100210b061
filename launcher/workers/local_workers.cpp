// LocalWorkers (local_workers.h): spawning, pipe pumps and reaping of this machine's workers.
#include "launcher/workers/local_workers.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <utility>

#include "hvdrun/error.h"
#include "launcher/output/logging.h"
#include "launcher/plan/open_files.h"

namespace hvdrun::launcher {
namespace {

namespace asio = boost::asio;
constexpr std::size_t kReadBufferBytes = 32 * 1024;
// How long an interactive worker's partial line waits for its end before it is shown: a
// prompt (pdb's "(Pdb) ") is written in one piece, and the user waits for it.
constexpr std::chrono::milliseconds kPromptDelay{50};

// "64 (hard 64)": the soft and hard RLIMIT_NOFILE.
std::string open_file_limit_text() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return "unknown";
  auto text = [](rlim_t v) {
    return v == RLIM_INFINITY ? std::string("unlimited") : std::to_string(v);
  };
  return text(limit.rlim_cur) + " (hard " + text(limit.rlim_max) + ")";
}

std::size_t open_files_now() {
  std::error_code ec;
  std::size_t count = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++count;
  }
  return count;
}

// A batch that cannot fit under RLIMIT_NOFILE fails before its first fork, not after
// thousands of workers were started.
void check_open_file_budget(std::size_t workers) {
  const std::size_t limit = open_file_limit();
  if (limit == SIZE_MAX) return;
  const std::size_t open = open_files_now();
  const std::size_t needed = open + workers * kFilesPerLocalWorker + kLauncherFiles;
  if (needed <= limit) return;
  throw Error("cannot start " + std::to_string(workers) + " local workers: they need about " +
              std::to_string(needed) + " open files (" + std::to_string(open) +
              " open in hvdrun now), more than the open-file limit " + open_file_limit_text() +
              ": raise ulimit -n, or start fewer workers on this host");
}

}  // namespace

LocalWorkers::LocalWorkers(asio::io_context& io, Watchdog& watchdog, OutputSink& sink,
                           Callbacks callbacks, std::vector<std::string> command, bool verbose,
                           RankZeroStdin* rank_zero_stdin)
    : io_(io),
      watchdog_(watchdog),
      sink_(sink),
      callbacks_(std::move(callbacks)),
      command_(std::move(command)),
      verbose_(verbose),
      rank_zero_stdin_(rank_zero_stdin) {}

void LocalWorkers::start(std::vector<WorkerLaunch> launches) {
  if (launches.empty()) return;
  spawn(command_, std::move(launches), verbose_);
  reap();  // exits that happened before the next SIGCHLD wait
}

void LocalWorkers::spawn(const std::vector<std::string>& command, std::vector<Launch> launches,
                         bool verbose) {
  if (launches.empty()) return;
  program_ = command.at(0);
  check_open_file_budget(launches.size());
  const auto start = std::chrono::steady_clock::now();
  std::vector<Spawned> spawned;
  spawned.reserve(launches.size());
  std::optional<std::size_t> interactive;  // the launch that reads the terminal
  for (std::size_t i = 0; i < launches.size(); ++i) {
    SpawnOptions options;
    if (rank_zero_stdin_ != nullptr && launches[i].slot.rank == 0 &&
        rank_zero_stdin_->give(options)) {
      interactive = i;
    }
    try {
      spawned.push_back(launcher::spawn(command, launches[i].env, options));
    } catch (const SystemError& e) {
      if (e.error_number() != EMFILE && e.error_number() != ENFILE) throw;
      e.rethrow_as("cannot start rank " + std::to_string(launches[i].slot.rank) + " (" +
                   std::to_string(i) + " of " + std::to_string(launches.size()) +
                   " local workers started): " + e.what() + "; open-file limit " +
                   open_file_limit_text() + ": raise ulimit -n");
    }
    watchdog_.watch(spawned.back().child.pgid());
  }
  std::vector<Worker*> started;
  started.reserve(launches.size());
  for (std::size_t i = 0; i < launches.size(); ++i) {
    Spawned& s = spawned[i];
    auto worker = std::make_unique<Worker>();
    Worker& w = *worker;
    w.id = launches[i].id;
    w.slot = launches[i].slot;
    w.child = std::move(s.child);
    for (UniqueFd* fd : {&s.out, &s.err, &s.exec_report}) {
      if (fd->valid()) ::fcntl(fd->get(), F_SETFL, O_NONBLOCK);
    }
    w.out.emplace(io_, s.out.release());
    w.err.emplace(io_, s.err.release());
    if (interactive == i) {
      for (auto& timer : w.prompt_timers) timer = std::make_unique<asio::steady_timer>(io_);
    }
    if (s.exec_report.valid()) {
      w.report.emplace(io_, s.exec_report.release());
    } else {
      w.report_known = true;
    }
    open_streams_ += 2;
    started.push_back(&w);
    workers_.emplace(w.id, std::move(worker));
  }
  if (verbose) {
    note("spawned " + std::to_string(started.size()) +
         (started.size() == 1 ? " worker" : " workers") + " in " + millis_since(start));
    const std::string line = shell_command_line(command);
    for (const auto* w : started) {
      note(worker_label(w->slot) + " on " + w->slot.host + " (pid " +
           std::to_string(w->child.pid()) + "): " + line);
    }
  }
  auto rethrow = [](const std::exception_ptr& e) {
    if (e) std::rethrow_exception(e);
  };
  for (auto* w : started) {
    if (w->report) asio::co_spawn(io_, read_exec_report(*w), rethrow);
    asio::co_spawn(io_, pump(*w, StreamKind::kStdout), rethrow);
    asio::co_spawn(io_, pump(*w, StreamKind::kStderr), rethrow);
  }
}

// The child writes exec's errno to the report pipe if exec fails; a successful exec closes
// it (close-on-exec) with nothing written.
asio::awaitable<void> LocalWorkers::read_exec_report(Worker& w) {
  int error = 0;
  auto [ec, n] = co_await asio::async_read(*w.report, asio::buffer(&error, sizeof error),
                                           asio::as_tuple(asio::use_awaitable));
  boost::system::error_code ignored;
  w.report->close(ignored);
  w.exec_errno = n == sizeof error ? error : 0;
  w.report_known = true;
  if (w.exec_errno != 0) {
    note(worker_label(w.slot) + ": cannot run '" + program_ + "': " + std::strerror(w.exec_errno));
  }
  if (w.held_exit) report_exit(w, *std::exchange(w.held_exit, std::nullopt));
}

asio::awaitable<void> LocalWorkers::pump(Worker& w, StreamKind kind) {
  auto& stream = kind == StreamKind::kStdout ? *w.out : *w.err;
  std::vector<char> buffer(kReadBufferBytes);
  Console& console = sink_.console();
  for (;;) {
    // Back-pressure: while the console is behind, the pipe is left to fill.
    while (console.paused(kind) && !closing_streams_ && !dropped(kind) &&
           !sink_.console_closed(kind)) {
      co_await console.next_resume();
    }
    if (closing_streams_) break;
    auto [ec, n] =
        co_await stream.async_read_some(asio::buffer(buffer), asio::as_tuple(asio::use_awaitable));
    if (n > 0) {
      sink_.write(w.id, kind, {buffer.data(), n});
      if (w.prompt_timers[0] && sink_.holds_partial(w.id, kind)) show_prompt_later(w, kind);
    }
    if (sink_.console_closed(kind)) drop_streams(kind);
    if (ec || dropped(kind)) break;
  }
  // Cancelled by close_streams(): take what the pipe still holds, without waiting.
  while (closing_streams_ && !dropped(kind)) {
    ssize_t n = ::read(stream.native_handle(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    sink_.write(w.id, kind, {buffer.data(), static_cast<std::size_t>(n)});
  }
  if (!dropped(kind)) sink_.finish(w.id, kind);
  boost::system::error_code ignored;
  stream.close(ignored);
  --open_streams_;
  forget_empty_groups();
  callbacks_.on_stream_closed(w.id);
}

void LocalWorkers::show_prompt_later(Worker& w, StreamKind kind) {
  auto& timer = *w.prompt_timers[kind == StreamKind::kStderr ? 1 : 0];
  timer.expires_after(kPromptDelay);  // cancels the wait for an earlier partial line
  timer.async_wait([this, &w, kind](const boost::system::error_code& ec) {
    if (!ec && sink_.holds_partial(w.id, kind)) sink_.show_partial(w.id, kind);
  });
}

// The console reader of `kind` is gone: close that pipe of every rank, so the workers get
// SIGPIPE/EPIPE on their next write, as in a shell pipeline.
void LocalWorkers::drop_streams(StreamKind kind) {
  bool& dropped_kind = dropped_[kind == StreamKind::kStderr ? 1 : 0];
  if (dropped_kind) return;
  dropped_kind = true;
  launcher_log()->debug("the console's {} was closed; closing that pipe of every rank",
                        kind == StreamKind::kStderr ? "stderr" : "stdout");
  for (auto& [id, w] : workers_) {
    auto& stream = kind == StreamKind::kStdout ? *w->out : *w->err;
    boost::system::error_code ignored;
    if (stream.is_open()) stream.cancel(ignored);
  }
}

bool LocalWorkers::streams_open(const WorkerId& worker) const {
  const auto it = workers_.find(worker);
  return it != workers_.end() && (it->second->out->is_open() || it->second->err->is_open());
}

// Exits of one pass, those killed by a signal the launcher did not send first: when a rank
// is SIGKILLed and its peers exit 1 because it vanished, the signalled one is the cause.
void LocalWorkers::reap() {
  std::vector<std::pair<Worker*, ProcessEnd>> ended;
  for (auto& [id, w] : workers_) {
    if (w->exited) continue;
    if (auto status = w->child.try_reap()) ended.emplace_back(w.get(), *status);
  }
  if (!signalled_) {
    std::stable_partition(ended.begin(), ended.end(), [](const auto& e) {
      return e.second.kind == ProcessEnd::Kind::kSignaled;
    });
  }
  for (auto& [w, status] : ended) on_exit(*w, status);
  forget_empty_groups();
}

// Tells the watchdog about exited workers whose group has become empty, so that it never
// kills a group id the system has given to someone else.
void LocalWorkers::forget_empty_groups() {
  for (auto& [id, w] : workers_) {
    if (!w->exited || w->group_empty) continue;
    if (w->child.signal_group(0) == ESRCH) {
      w->group_empty = true;
      watchdog_.forget(w->child.pgid());
    }
  }
}

void LocalWorkers::on_exit(Worker& w, ProcessEnd status) {
  w.exited = true;
  // What is typed after the worker that read the terminal ended is the shell's again.
  if (w.prompt_timers[0] && rank_zero_stdin_ != nullptr) rank_zero_stdin_->pause();
  if (!w.report_known) {
    w.held_exit = std::move(status);
    return;
  }
  report_exit(w, std::move(status));
}

void LocalWorkers::report_exit(Worker& w, ProcessEnd status) {
  launcher_log()->debug("rank {} (pid {}) ended: {}", w.slot.rank, w.child.pid(),
                        status.describe());
  std::string cause;
  if (w.exec_errno != 0) {
    cause = "cannot run '" + program_ + "': " + std::strerror(w.exec_errno);
  } else if (dropped(StreamKind::kStdout) || dropped(StreamKind::kStderr)) {
    // Killed by SIGPIPE, or ended by its own error on EPIPE (Python's BrokenPipeError); not
    // another signal (SIGSEGV, a kill), which a closed pipe does not cause.
    const bool sigpipe = status.kind == ProcessEnd::Kind::kSignaled && status.value == SIGPIPE;
    const bool error_exit = status.kind == ProcessEnd::Kind::kExited && status.value != 0;
    if (sigpipe || error_exit) {
      cause = std::string(sigpipe ? "" : "after ") +
              "hvdrun's output was closed by its reader, e.g. `| head`";
    }
  }
  status.message = std::move(cause);
  status.pid = w.child.pid();
  callbacks_.on_exit(w.id, std::move(status));
}

void LocalWorkers::signal_all(int signo) {
  if (signo == SIGTERM || signo == SIGKILL) signalled_ = true;  // not a forwarded one
  for (auto& [id, w] : workers_) {
    if (w->group_empty) continue;
    if (!signals_group(signo)) {
      if (!w->exited) w->child.signal_process(signo);
      continue;
    }
    if (w->child.signal_group(signo) == ESRCH && w->exited) {
      w->group_empty = true;
      watchdog_.forget(w->child.pgid());
    }
  }
}

std::vector<std::pair<WorkerId, pid_t>> LocalWorkers::running_pids() const {
  std::vector<std::pair<WorkerId, pid_t>> out;
  for (const auto& [id, w] : workers_) {
    if (!w->exited && w->child.pid() > 0) out.emplace_back(id, w->child.pid());
  }
  return out;
}

void LocalWorkers::signal(const WorkerId& worker, int signo) {
  const auto it = workers_.find(worker);
  if (it == workers_.end() || it->second->group_empty) return;
  it->second->child.signal_group(signo);
}

void LocalWorkers::close_streams() {
  launcher_log()->info(
      "output pipes still open 1 s after every worker exited; killing what is left of "
      "the worker process groups");
  signal_all(SIGKILL);
  closing_streams_ = true;
  sink_.console().wake();
  for (auto& [id, w] : workers_) {
    boost::system::error_code ignored;
    if (w->out->is_open()) w->out->cancel(ignored);
    if (w->err->is_open()) w->err->cancel(ignored);
  }
}

}  // namespace hvdrun::launcher
