// Console (console.h): one writer thread per console stream, its queue, pausing and failures.
#include "launcher/output/console.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "common/unique_fd.h"
#include "hvdrun/error.h"

namespace hvdrun::launcher {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kBatchEntries = 256;  // entries (whole lines) per writev; IOV_MAX: 1024
constexpr std::size_t kBatchBytes = 1u << 20;
constexpr auto kAbandonWait = std::chrono::milliseconds(100);

struct Entry {
  std::string bytes;
  std::string origin;
};

// Writes the entries with writev until all is written or a write fails. Returns 0, or the
// errno and (in `failed`) the index of the entry it failed in.
int write_entries(int fd, const std::vector<Entry>& entries, std::size_t& failed) {
  std::vector<iovec> iov;
  iov.reserve(entries.size());
  for (const auto& e : entries) {
    iov.push_back({const_cast<char*>(e.bytes.data()), e.bytes.size()});
  }
  std::size_t first = 0;  // the first entry not entirely written
  while (first < iov.size()) {
    const ssize_t n = ::writev(fd, iov.data() + first, static_cast<int>(iov.size() - first));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {  // a console someone made non-blocking
        pollfd ready{fd, POLLOUT, 0};
        if (::poll(&ready, 1, -1) >= 0 || errno == EINTR) continue;
      }
      failed = first;
      return errno;
    }
    auto left = static_cast<std::size_t>(n);
    while (first < iov.size() && left >= iov[first].iov_len) {
      left -= iov[first].iov_len;
      ++first;
    }
    if (first < iov.size()) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return 0;
}

// Whether two descriptors write to the same file (`2>&1`): then one writer keeps their order.
bool same_file(int a, int b) {
  struct stat sa {};
  struct stat sb {};
  if (::fstat(a, &sa) != 0 || ::fstat(b, &sb) != 0) return a == b;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace

// One console stream: its queue and the thread that writes it. The thread owns a reference to
// the state, so a writer blocked on a reader that never reads can be left behind safely.
class ConsoleWriter {
 public:
  ConsoleWriter(int fd, std::string name, const ConsoleOptions& options,
                std::function<void()> on_resume)
      : state_(std::make_shared<State>()) {
    state_->fd = UniqueFd(::fcntl(fd, F_DUPFD_CLOEXEC, 3));
    if (!state_->fd.valid()) {
      throw SystemError("cannot use " + name + ": " + std::strerror(errno), "fcntl", errno);
    }
    state_->name = std::move(name);
    state_->pause_bytes = options.pause_bytes;
    state_->resume_bytes = std::min(options.resume_bytes, options.pause_bytes);
    state_->on_resume = std::move(on_resume);
    std::thread(run, state_).detach();
  }

  ~ConsoleWriter() {
    std::unique_lock lock(state_->mutex);
    state_->stop = true;
    state_->on_resume = nullptr;
    state_->changed.notify_all();
    state_->changed.wait_for(lock, kAbandonWait, [&] { return state_->exited; });
  }

  ConsoleWriter(const ConsoleWriter&) = delete;
  ConsoleWriter& operator=(const ConsoleWriter&) = delete;

  // Failure lines go to `target` (stderr's writer; maybe this one).
  void report_to(const std::shared_ptr<ConsoleWriter>& target) {
    std::lock_guard lock(state_->mutex);
    state_->report = target->state_;
  }

  void push(std::string bytes, std::string origin) {
    State::push(*state_, std::move(bytes), std::move(origin));
  }

  bool paused() const noexcept { return state_->paused.load(std::memory_order_relaxed); }
  bool closed() const noexcept { return state_->closed.load(std::memory_order_relaxed); }

  std::string failure() const {
    std::lock_guard lock(state_->mutex);
    return state_->failure;
  }

  std::size_t queued() const {
    std::lock_guard lock(state_->mutex);
    return state_->bytes;
  }

  // Waits up to `step` for the queue to empty; returns whether it is empty.
  bool wait_drained(std::chrono::milliseconds step) const {
    std::unique_lock lock(state_->mutex);
    return state_->changed.wait_for(lock, step, [&] { return state_->bytes == 0; });
  }

 private:
  // "rank 2's stdout to hvdrun's stdout: No space left on device"
  static std::string describe(const std::string& origin, const std::string& name, int error) {
    return origin + " to " + name + ": " + std::strerror(error);
  }

  struct State {
    UniqueFd fd;       // a duplicate: the thread's own, whatever happens to the original
    std::string name;  // "hvdrun's stdout"
    std::size_t pause_bytes = 0;
    std::size_t resume_bytes = 0;
    mutable std::mutex mutex;
    std::condition_variable changed;
    std::deque<Entry> queue;
    std::size_t bytes = 0;  // queued or being written
    bool stop = false;
    bool exited = false;
    bool broken = false;              // closed or failed: nothing more is written
    int error = 0;                    // what failed it (not EPIPE); 0 when none
    std::function<void()> on_resume;  // called under the mutex; cleared at destruction
    std::weak_ptr<State> report;      // where a failure line goes
    std::string failure;
    std::atomic<bool> paused{false};
    std::atomic<bool> closed{false};

    static void push(State& s, std::string bytes, std::string origin) {
      if (bytes.empty()) return;
      std::lock_guard lock(s.mutex);
      if (s.broken || s.stop) {
        // A worker's output lost on a stream that failed before it (on hvdrun's own line):
        // the first such loss is the failure the job reports.
        if (s.error != 0 && !origin.empty() && s.failure.empty()) {
          s.failure = describe(origin, s.name, s.error);
        }
        return;
      }
      s.bytes += bytes.size();
      s.queue.push_back({std::move(bytes), std::move(origin)});
      if (s.bytes >= s.pause_bytes) s.paused.store(true, std::memory_order_relaxed);
      s.changed.notify_all();
    }
  };

  static void run(std::shared_ptr<State> s) {
    std::vector<Entry> batch;
    for (;;) {
      std::size_t batch_bytes = 0;
      {
        std::unique_lock lock(s->mutex);
        s->changed.wait(lock, [&] { return s->stop || !s->queue.empty(); });
        if (s->stop) break;
        while (!s->queue.empty() && batch.size() < kBatchEntries && batch_bytes < kBatchBytes) {
          batch_bytes += s->queue.front().bytes.size();
          batch.push_back(std::move(s->queue.front()));
          s->queue.pop_front();
        }
      }
      std::size_t failed_at = 0;
      const int error = write_entries(s->fd.get(), batch, failed_at);
      std::string report;
      std::shared_ptr<State> report_to;
      if (error != 0) {
        std::lock_guard lock(s->mutex);
        if (!s->broken) {
          s->broken = true;
          if (error == EPIPE) {
            s->closed.store(true, std::memory_order_relaxed);
          } else {
            s->error = error;
            const std::string& origin = batch[failed_at].origin;
            report = "hvdrun: cannot write " +
                     describe(origin.empty() ? "hvdrun's own lines" : origin, s->name, error) +
                     "; later output to it is lost\n";
            report_to = s->report.lock();
            // The failure is the first worker output lost: in this entry, or after it.
            const auto lost = std::find_if(batch.begin() + static_cast<std::ptrdiff_t>(failed_at),
                                           batch.end(), [](auto& e) { return !e.origin.empty(); });
            const auto queued = std::find_if(s->queue.begin(), s->queue.end(),
                                             [](auto& e) { return !e.origin.empty(); });
            if (lost != batch.end()) {
              s->failure = describe(lost->origin, s->name, error);
            } else if (queued != s->queue.end()) {
              s->failure = describe(queued->origin, s->name, error);
            }
          }
          for (const auto& e : s->queue) s->bytes -= e.bytes.size();
          s->queue.clear();
        }
      }
      // Queued before this batch counts as written, so a drain that sees it done sees the
      // report too (on a shared writer, which is broken now, it is dropped).
      if (report_to) State::push(*report_to, std::move(report), {});
      {
        std::lock_guard lock(s->mutex);
        s->bytes -= batch_bytes;
        if (s->paused.load(std::memory_order_relaxed) && s->bytes <= s->resume_bytes) {
          s->paused.store(false, std::memory_order_relaxed);
          if (s->on_resume) s->on_resume();
        } else if (s->broken && s->on_resume) {
          s->on_resume();  // pumps waiting for room must see closed() now
        }
        s->changed.notify_all();
      }
      batch.clear();
    }
    std::lock_guard lock(s->mutex);
    s->exited = true;
    s->changed.notify_all();
  }

  std::shared_ptr<State> state_;
};

Console::Console(asio::io_context& io, ConsoleOptions options)
    : io_(io), resume_(io, Clock::time_point::max()) {
  auto on_resume = [this] { asio::post(io_, [this] { resume_.cancel(); }); };
  writers_[0] =
      std::make_shared<ConsoleWriter>(options.stdout_fd, "hvdrun's stdout", options, on_resume);
  writers_[1] = same_file(options.stdout_fd, options.stderr_fd)
                    ? writers_[0]
                    : std::make_shared<ConsoleWriter>(options.stderr_fd, "hvdrun's stderr", options,
                                                      on_resume);
  writers_[0]->report_to(writers_[1]);
  writers_[1]->report_to(writers_[1]);
}

Console::~Console() {
  if (!gave_up_) drain(std::chrono::seconds(1), nullptr);
}

ConsoleWriter& Console::writer(StreamKind kind) const {
  return *writers_[kind == StreamKind::kStderr ? 1 : 0];
}

void Console::write(StreamKind kind, std::string bytes, std::string origin) {
  writer(kind).push(std::move(bytes), std::move(origin));
}

bool Console::paused(StreamKind kind) const noexcept {
  return writer(kind).paused();
}

bool Console::closed(StreamKind kind) const noexcept {
  return writer(kind).closed();
}

std::size_t Console::queued(StreamKind kind) const {
  return writer(kind).queued();
}

std::string Console::failure() const {
  std::string first = writers_[0]->failure();
  return first.empty() ? writers_[1]->failure() : first;
}

asio::awaitable<void> Console::next_resume() {
  co_await resume_.async_wait(asio::as_tuple(asio::use_awaitable));
}

void Console::wake() {
  resume_.cancel();
}

bool Console::drain(std::optional<std::chrono::milliseconds> limit,
                    const std::function<bool()>& poll) {
  const auto deadline = limit ? Clock::now() + *limit : Clock::time_point::max();
  for (;;) {
    bool all = true;
    for (const auto& w : writers_) {
      if (!w->wait_drained(std::chrono::milliseconds(10))) all = false;
    }
    if (all) return true;
    if ((poll && poll()) || Clock::now() >= deadline) {
      gave_up_ = true;
      return false;
    }
  }
}

}  // namespace hvdrun::launcher
