// run_job (supervisor.h): placement, watchdog, rendezvous server, spawning, output pumps and
// the fail-fast policy on one io_context. Reads JobSpec: hosts, num_proc, command,
// start_timeout, grace_period, output settings, verbose, log_level.
#include "supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/asio/as_tuple.hpp>
#include <cstring>
#include <optional>

#include "auth.h"
#include "hvdrun/error.h"
#include "local_host.h"
#include "logging.h"
#include "output.h"
#include "placement.h"
#include "process.h"
#include "server.h"
#include "watchdog.h"
#include "worker_env.h"

namespace hvdrun::launcher {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

constexpr auto kDrainTimeout = std::chrono::seconds(1);
constexpr std::size_t kReadBufferBytes = 32 * 1024;

std::string plural(std::size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

void require_local_hosts(const JobSpec& spec) {
  for (const auto& host : spec.hosts) {
    if (!is_local_host(host.name)) {
      throw UsageError("host '" + host.name + "' (from " + host.origin +
                       ") is not this machine; SSH launching is not enabled yet");
    }
  }
}

std::uint16_t free_local_port(asio::io_context& io) {
  asio::ip::tcp::acceptor probe(io, {asio::ip::make_address("127.0.0.1"), 0});
  return probe.local_endpoint().port();
}

struct Worker {
  Slot slot;
  Child child;
  std::optional<asio::posix::stream_descriptor> out;
  std::optional<asio::posix::stream_descriptor> err;
  std::optional<ExitStatus> status;
  int exec_errno = 0;
  bool group_empty = false;  // kill(-pgid, 0) said ESRCH: never signal that id again
};

// What ended the job first; later events do not change it.
struct Outcome {
  enum class Kind { kWorkerFailed, kInterrupted, kJobError };
  Kind kind;
  std::size_t worker = 0;  // kWorkerFailed
  int signo = 0;           // kInterrupted
  std::string message;     // kJobError
};

// Owns the workers and every asynchronous operation of the job. Lives on the stack of
// run_job around io_context::run(); io thread only.
class Supervisor {
 public:
  Supervisor(asio::io_context& io, const JobSpec& spec, std::vector<Slot> slots, Watchdog& watchdog,
             OutputSink& sink, std::function<void()> on_finished)
      : io_(io),
        spec_(spec),
        slots_(std::move(slots)),
        watchdog_(watchdog),
        sink_(sink),
        on_finished_(std::move(on_finished)),
        signals_(io, SIGCHLD, SIGINT, SIGTERM),
        grace_timer_(io),
        drain_timer_(io) {}

  void launch(const std::map<std::string, std::string>& environment, const RendezvousInfo& rdzv);
  void fail_job(const std::string& message);
  void all_joined();
  int exit_status() const;
  void print_summary() const;

 private:
  void spawn_all(const std::map<std::string, std::string>& environment, const RendezvousInfo& rdzv);
  asio::awaitable<void> pump(std::size_t index, StreamKind kind);
  void wait_signal();
  void on_signal(int signo);
  void reap();
  void on_exit(std::size_t index, ExitStatus status);
  void terminate();
  void kill_all(int signo);
  std::size_t running() const;
  void maybe_finish();
  void drain_expired();
  void finish();

  asio::io_context& io_;
  const JobSpec& spec_;
  std::vector<Slot> slots_;
  Watchdog& watchdog_;
  OutputSink& sink_;
  std::function<void()> on_finished_;
  asio::signal_set signals_;
  asio::steady_timer grace_timer_;
  asio::steady_timer drain_timer_;
  std::vector<Worker> workers_;
  std::optional<Outcome> outcome_;
  Clock::time_point started_ = Clock::now();
  std::size_t exited_ = 0;
  std::size_t open_streams_ = 0;
  bool terminating_ = false;
  bool killed_ = false;
  bool draining_ = false;
  bool closing_streams_ = false;
  bool finished_ = false;
};

void Supervisor::launch(const std::map<std::string, std::string>& environment,
                        const RendezvousInfo& rdzv) {
  wait_signal();
  spawn_all(environment, rdzv);
  auto rethrow = [](const std::exception_ptr& e) {
    if (e) std::rethrow_exception(e);
  };
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    asio::co_spawn(io_, pump(i, StreamKind::kStdout), rethrow);
    asio::co_spawn(io_, pump(i, StreamKind::kStderr), rethrow);
  }
  reap();  // exits that happened before the first SIGCHLD wait
}

void Supervisor::spawn_all(const std::map<std::string, std::string>& environment,
                           const RendezvousInfo& rdzv) {
  auto start = Clock::now();
  std::vector<Spawned> spawned;
  spawned.reserve(slots_.size());
  for (const Slot& slot : slots_) {
    auto env = worker_environment(environment, spec_, slot, rdzv);
    spawned.push_back(spawn(spec_.command, env));
    watchdog_.watch(spawned.back().child.pgid());
  }
  workers_.reserve(slots_.size());
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    Spawned& s = spawned[i];
    Worker& w = workers_.emplace_back();
    w.slot = slots_[i];
    w.exec_errno = exec_error(s);
    w.child = std::move(s.child);
    for (Fd* fd : {&s.out, &s.err}) ::fcntl(fd->get(), F_SETFL, O_NONBLOCK);
    w.out.emplace(io_, s.out.release());
    w.err.emplace(io_, s.err.release());
    open_streams_ += 2;
    if (w.exec_errno != 0) {
      note("rank " + std::to_string(w.slot.rank) + ": cannot run '" + spec_.command[0] +
           "': " + std::strerror(w.exec_errno));
    }
  }
  if (spec_.verbose) {
    note("spawned " + plural(workers_.size(), "worker") + " in " + millis_since(start));
    std::string command = shell_command_line(spec_.command);
    for (const auto& w : workers_) {
      note("rank " + std::to_string(w.slot.rank) + " on " + w.slot.host + " (pid " +
           std::to_string(w.child.pid()) + "): " + command);
    }
  }
}

asio::awaitable<void> Supervisor::pump(std::size_t index, StreamKind kind) {
  Worker& w = workers_[index];
  auto& stream = kind == StreamKind::kStdout ? *w.out : *w.err;
  LineSplitter splitter;
  auto emit = [&](std::string_view chunk) { sink_.write(w.slot.rank, kind, chunk); };
  std::vector<char> buffer(kReadBufferBytes);
  for (;;) {
    auto [ec, n] =
        co_await stream.async_read_some(asio::buffer(buffer), asio::as_tuple(asio::use_awaitable));
    if (n > 0) splitter.feed({buffer.data(), n}, emit);
    if (ec) break;
  }
  // Cancelled by the drain deadline: take what the pipe still holds, without waiting.
  while (closing_streams_) {
    ssize_t n = ::read(stream.native_handle(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    splitter.feed({buffer.data(), static_cast<std::size_t>(n)}, emit);
  }
  splitter.finish(emit);
  boost::system::error_code ignored;
  stream.close(ignored);
  --open_streams_;
  maybe_finish();
}

void Supervisor::wait_signal() {
  signals_.async_wait([this](const boost::system::error_code& ec, int signo) {
    if (ec || finished_) return;
    on_signal(signo);
    if (!finished_) wait_signal();
  });
}

void Supervisor::on_signal(int signo) {
  if (signo == SIGCHLD) {
    reap();
    return;
  }
  if (terminating_) {
    if (!killed_) note("second " + signal_name(signo) + ": killing every rank now");
    kill_all(SIGKILL);
    return;
  }
  if (!outcome_) outcome_ = Outcome{Outcome::Kind::kInterrupted, 0, signo, {}};
  note("interrupted (" + signal_name(signo) + "), terminating " + plural(running(), "rank"));
  terminate();
  maybe_finish();
}

void Supervisor::reap() {
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    if (workers_[i].status) continue;
    if (auto status = workers_[i].child.try_reap()) on_exit(i, *status);
  }
}

void Supervisor::on_exit(std::size_t index, ExitStatus status) {
  Worker& w = workers_[index];
  w.status = status;
  ++exited_;
  if (w.child.signal_group(0) == ESRCH) {
    w.group_empty = true;
    watchdog_.forget(w.child.pgid());
  }
  spdlog::get("launcher")
      ->debug("rank {} (pid {}) ended: {}", w.slot.rank, w.child.pid(), status.describe());
  if (!status.success() && !outcome_) {
    outcome_ = Outcome{Outcome::Kind::kWorkerFailed, index, 0, {}};
    std::string what = status.kind == ExitStatus::Kind::kExited
                           ? "exited with code " + std::to_string(status.value)
                           : "was " + status.describe();
    std::size_t others = running();
    note("rank " + std::to_string(w.slot.rank) + " (host " + w.slot.host + ", pid " +
         std::to_string(w.child.pid()) + ") " + what +
         (others ? "; terminating " + std::to_string(others) + " other " +
                       (others == 1 ? "rank" : "ranks")
                 : ""));
    terminate();
  }
  maybe_finish();
}

void Supervisor::terminate() {
  if (terminating_) return;
  terminating_ = true;
  kill_all(SIGTERM);
  grace_timer_.expires_after(spec_.grace_period);
  grace_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || finished_) return;
    if (std::size_t left = running()) {
      note("grace period of " + std::to_string(spec_.grace_period.count()) + " ms over: killing " +
           plural(left, "rank") + " with SIGKILL");
    }
    kill_all(SIGKILL);
  });
}

void Supervisor::kill_all(int signo) {
  if (signo == SIGKILL) killed_ = true;
  for (auto& w : workers_) {
    if (w.group_empty) continue;
    if (w.child.signal_group(signo) == ESRCH && w.status) {
      w.group_empty = true;
      watchdog_.forget(w.child.pgid());
    }
  }
}

std::size_t Supervisor::running() const {
  return workers_.size() - exited_;
}

void Supervisor::maybe_finish() {
  if (finished_ || exited_ < workers_.size()) return;
  if (open_streams_ == 0) {
    finish();
    return;
  }
  if (draining_) return;
  draining_ = true;
  drain_timer_.expires_after(kDrainTimeout);
  drain_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && !finished_) drain_expired();
  });
}

// Every worker has exited but some pipe is still open (a child of a worker holds it).
void Supervisor::drain_expired() {
  spdlog::get("launcher")
      ->info(
          "output pipes still open {} after every worker exited; killing "
          "what is left of the worker process groups",
          "1 s");
  kill_all(SIGKILL);
  closing_streams_ = true;
  for (auto& w : workers_) {
    boost::system::error_code ignored;
    if (w.out->is_open()) w.out->cancel(ignored);
    if (w.err->is_open()) w.err->cancel(ignored);
  }
}

void Supervisor::finish() {
  finished_ = true;
  grace_timer_.cancel();
  drain_timer_.cancel();
  boost::system::error_code ignored;
  signals_.clear(ignored);  // restores the default dispositions
  signals_.cancel(ignored);
  kill_all(SIGKILL);  // anything a worker left behind in its group
  if (spec_.verbose) note("job finished in " + millis_since(started_));
  on_finished_();
}

void Supervisor::fail_job(const std::string& message) {
  if (finished_) return;
  if (!outcome_) {
    outcome_ = Outcome{Outcome::Kind::kJobError, 0, 0, message};
    note("rendezvous failed; terminating " + plural(running(), "rank"));
  }
  terminate();
  maybe_finish();
}

void Supervisor::all_joined() {
  if (spec_.verbose) {
    note("all " + plural(workers_.size(), "rank") + " joined the rendezvous, " +
         millis_since(started_) + " after start");
  }
}

int Supervisor::exit_status() const {
  if (!outcome_) return 0;
  switch (outcome_->kind) {
    case Outcome::Kind::kWorkerFailed:
      return workers_[outcome_->worker].status->shell_code();
    case Outcome::Kind::kInterrupted:
      return 128 + outcome_->signo;
    case Outcome::Kind::kJobError:
      return 1;
  }
  return 1;
}

void Supervisor::print_summary() const {
  if (!outcome_ || outcome_->kind == Outcome::Kind::kInterrupted) return;
  if (outcome_->kind == Outcome::Kind::kJobError) {
    note("job failed: " + outcome_->message);
    return;
  }
  const Worker& w = workers_[outcome_->worker];
  std::string cause = w.status->describe();
  if (w.exec_errno != 0) {
    cause += " (cannot run '" + spec_.command[0] + "': " + std::strerror(w.exec_errno) + ")";
  }
  note("job failed: first failure was rank " + std::to_string(w.slot.rank) + " on " + w.slot.host +
       ": " + cause);
  const auto& tail = sink_.last_stderr_lines(w.slot.rank);
  if (tail.empty()) return;
  std::string text = "last stderr lines of rank " + std::to_string(w.slot.rank) + ":";
  for (const auto& line : tail) text += "\n    " + line;
  note(text);
}

std::vector<rdzv::SlotInfo> slot_infos(const std::vector<Slot>& slots) {
  std::vector<rdzv::SlotInfo> infos;
  infos.reserve(slots.size());
  for (const auto& s : slots) {
    infos.push_back({s.rank, s.local_rank, s.local_size, s.cross_rank, s.cross_size, s.host});
  }
  return infos;
}

}  // namespace

int run_job(const JobSpec& spec, const std::map<std::string, std::string>& environment) {
  setup_logging(spec.log_level);
  if (spec.command.empty()) throw UsageError("no program to run was given");
  require_local_hosts(spec);
  auto start = Clock::now();
  std::vector<Slot> slots = place(spec.hosts, spec.num_proc);
  if (spec.verbose) {
    note("placement: " + plural(slots.size(), "rank") + " on " + plural(spec.hosts.size(), "host") +
         " in " + millis_since(start));
  }
  Watchdog watchdog = Watchdog::start();  // before anything could start a thread
  asio::io_context io(1);
  OutputSink sink({spec.num_proc, spec.prefix_timestamp, spec.output_dir});

  start = Clock::now();
  std::optional<rdzv::Server> server;
  Supervisor supervisor(io, spec, slots, watchdog, sink, [&server] { server->close(); });
  rdzv::ServerOptions options;
  options.secret = rdzv::make_secret();
  options.slots = slot_infos(slots);
  options.start_timeout = spec.start_timeout;
  server.emplace(io, options,
                 rdzv::ServerCallbacks{
                     [&supervisor](const std::string& message) { supervisor.fail_job(message); },
                     [&supervisor] { supervisor.all_joined(); }});
  RendezvousInfo rdzv{"127.0.0.1", server->port(), options.secret, "127.0.0.1",
                      free_local_port(io)};
  if (spec.verbose) {
    note("rendezvous server up on 127.0.0.1:" + std::to_string(rdzv.port) + " in " +
         millis_since(start));
  }
  supervisor.launch(environment, rdzv);
  io.run();
  watchdog.disarm();
  supervisor.print_summary();
  return supervisor.exit_status();
}

}  // namespace hvdrun::launcher
