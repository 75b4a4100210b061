// LocalWorkers (local_workers.h): spawning, pipe pumps and reaping of this machine's workers.
#include "local_workers.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <cstring>

#include "logging.h"

namespace hvdrun::launcher {
namespace {

namespace asio = boost::asio;
constexpr std::size_t kReadBufferBytes = 32 * 1024;

}  // namespace

LocalWorkers::LocalWorkers(asio::io_context& io, Watchdog& watchdog, OutputSink& sink,
                           Callbacks callbacks)
    : io_(io), watchdog_(watchdog), sink_(sink), callbacks_(std::move(callbacks)) {}

void LocalWorkers::spawn(const std::vector<std::string>& command, const std::vector<Slot>& slots,
                         const std::vector<std::vector<std::string>>& environments, bool verbose) {
  if (slots.empty()) return;
  program_ = command.at(0);
  const auto start = std::chrono::steady_clock::now();
  std::vector<Spawned> spawned;
  spawned.reserve(slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i) {
    spawned.push_back(launcher::spawn(command, environments[i]));
    watchdog_.watch(spawned.back().child.pgid());
  }
  workers_.reserve(slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i) {
    Spawned& s = spawned[i];
    Worker& w = workers_.emplace_back();
    w.slot = slots[i];
    w.exec_errno = exec_error(s);
    w.child = std::move(s.child);
    for (UniqueFd* fd : {&s.out, &s.err}) ::fcntl(fd->get(), F_SETFL, O_NONBLOCK);
    w.out.emplace(io_, s.out.release());
    w.err.emplace(io_, s.err.release());
    open_streams_ += 2;
    if (w.exec_errno != 0) {
      note("rank " + std::to_string(w.slot.rank) + ": cannot run '" + command[0] +
           "': " + std::strerror(w.exec_errno));
    }
  }
  if (verbose) {
    note("spawned " + std::to_string(workers_.size()) +
         (workers_.size() == 1 ? " worker" : " workers") + " in " + millis_since(start));
    const std::string line = shell_command_line(command);
    for (const auto& w : workers_) {
      note("rank " + std::to_string(w.slot.rank) + " on " + w.slot.host + " (pid " +
           std::to_string(w.child.pid()) + "): " + line);
    }
  }
  auto rethrow = [](const std::exception_ptr& e) {
    if (e) std::rethrow_exception(e);
  };
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    asio::co_spawn(io_, pump(i, StreamKind::kStdout), rethrow);
    asio::co_spawn(io_, pump(i, StreamKind::kStderr), rethrow);
  }
}

asio::awaitable<void> LocalWorkers::pump(std::size_t index, StreamKind kind) {
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
  // Cancelled by close_streams(): take what the pipe still holds, without waiting.
  while (closing_streams_) {
    ssize_t n = ::read(stream.native_handle(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    splitter.feed({buffer.data(), static_cast<std::size_t>(n)}, emit);
  }
  splitter.finish(emit);
  boost::system::error_code ignored;
  stream.close(ignored);
  if (--open_streams_ == 0) callbacks_.on_streams_closed();
}

void LocalWorkers::reap() {
  for (auto& w : workers_) {
    if (w.exited) continue;
    if (auto status = w.child.try_reap()) on_exit(w, *status);
  }
}

void LocalWorkers::on_exit(Worker& w, ExitStatus status) {
  w.exited = true;
  if (w.child.signal_group(0) == ESRCH) {
    w.group_empty = true;
    watchdog_.forget(w.child.pgid());
  }
  spdlog::get("launcher")
      ->debug("rank {} (pid {}) ended: {}", w.slot.rank, w.child.pid(), status.describe());
  std::string cause;
  if (w.exec_errno != 0) {
    cause = "cannot run '" + program_ + "': " + std::strerror(w.exec_errno);
  }
  auto end = RankEnd::from_local(status, std::move(cause));
  end.pid = w.child.pid();
  callbacks_.on_exit(w.slot.rank, std::move(end));
}

void LocalWorkers::signal_all(int signo) {
  for (auto& w : workers_) {
    if (w.group_empty) continue;
    if (w.child.signal_group(signo) == ESRCH && w.exited) {
      w.group_empty = true;
      watchdog_.forget(w.child.pgid());
    }
  }
}

void LocalWorkers::close_streams() {
  spdlog::get("launcher")
      ->info(
          "output pipes still open 1 s after every worker exited; killing what is left of "
          "the worker process groups");
  signal_all(SIGKILL);
  closing_streams_ = true;
  for (auto& w : workers_) {
    boost::system::error_code ignored;
    if (w.out->is_open()) w.out->cancel(ignored);
    if (w.err->is_open()) w.err->cancel(ignored);
  }
}

}  // namespace hvdrun::launcher
