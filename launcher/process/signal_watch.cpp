// SignalWatch (signal_watch.h).
#include "launcher/process/signal_watch.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>

#include "common/process_end.h"
#include "hvdrun/error.h"
#include "launcher/process/signal_sender.h"

namespace hvdrun::launcher {
namespace {

struct Record {
  std::int32_t signo;
  std::int32_t code;
  std::int32_t pid;
  std::int64_t at_ns;  // CLOCK_MONOTONIC (steady_clock's) when the handler ran
};

// A signal handler reaches nothing but static storage: the write end of the open watch's pipe
// (-1 while none is open). This is the only state of its kind in the launcher.
std::atomic<int> handler_fd{-1};

extern "C" void on_signal(int signo, siginfo_t* info, void*) {
  const int saved = errno;
  const int fd = handler_fd.load(std::memory_order_relaxed);
  if (fd >= 0) {
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe
    Record r{signo, info ? info->si_code : 0, 0, now.tv_sec * 1'000'000'000LL + now.tv_nsec};
    if (info && (info->si_code == SI_USER || info->si_code == SI_QUEUE)) r.pid = info->si_pid;
    // A full pipe (thousands of signals unread) drops the record: the job acts on those it has.
    [[maybe_unused]] const auto n = ::write(fd, &r, sizeof r);
  }
  errno = saved;
}

}  // namespace

bool SignalEvent::from_kernel() const noexcept {
  return code == SI_KERNEL;
}

bool SignalEvent::from_step_daemon() const {
  return sent_by_step_daemon(sender);
}

std::string SignalEvent::sender_text() const {
  if (from_kernel() && (signo == SIGINT || signo == SIGQUIT)) return "the terminal";
  if (sender <= 0) return "";
  std::string text = "pid " + std::to_string(sender);
  if (const auto name = process_name(sender); !name.empty()) text += " (" + name + ")";
  return text;
}

std::string SignalEvent::describe() const {
  const std::string from = sender_text();
  return signal_name(signo) + (from.empty() ? "" : " from " + from);
}

SignalWatch::SignalWatch(boost::asio::io_context& io, std::vector<int> signals) : reader_(io) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw Error(std::string("pipe2 failed: ") + std::strerror(errno));
  }
  read_end_.reset(fds[0]);
  write_end_.reset(fds[1]);
  int none = -1;
  if (!handler_fd.compare_exchange_strong(none, write_end_.get())) {
    throw Error("internal: a second SignalWatch while one is open");
  }
  struct sigaction action {};
  action.sa_sigaction = on_signal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  ::sigfillset(&action.sa_mask);
  for (const int signo : signals) {
    struct sigaction old {};
    if (::sigaction(signo, &action, &old) == 0) previous_.emplace(signo, old);
  }
  reader_.assign(::dup(read_end_.get()));
  sigset_t watched;
  ::sigemptyset(&watched);
  for (const int signo : signals) ::sigaddset(&watched, signo);
  ::pthread_sigmask(SIG_UNBLOCK, &watched, nullptr);
}

namespace {

sigset_t job_signals() noexcept {
  sigset_t set;
  ::sigemptyset(&set);
  for (const int signo : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) {
    ::sigaddset(&set, signo);
  }
  return set;
}

}  // namespace

void block_job_signals() noexcept {
  const sigset_t set = job_signals();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void unblock_job_signals() noexcept {
  const sigset_t set = job_signals();
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

JobSignalsUnblocked::JobSignalsUnblocked() noexcept {
  const sigset_t set = job_signals();
  ::pthread_sigmask(SIG_UNBLOCK, &set, &previous_);
}

JobSignalsUnblocked::~JobSignalsUnblocked() {
  ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

SignalWatch::~SignalWatch() {
  close();
}

void SignalWatch::start(Handler handler) {
  handler_ = std::move(handler);
  read_next();
}

void SignalWatch::close() {
  if (!open_) return;
  open_ = false;
  for (const auto& [signo, old] : previous_) ::sigaction(signo, &old, nullptr);
  handler_fd.store(-1);
  boost::system::error_code ignored;
  reader_.close(ignored);
  handler_ = nullptr;
}

void SignalWatch::read_next() {
  reader_.async_read_some(
      boost::asio::buffer(buffer_ + have_, sizeof buffer_ - have_),
      [this](const boost::system::error_code& ec, std::size_t n) {
        if (ec || !open_) return;
        have_ += n;
        std::size_t used = 0;
        while (have_ - used >= sizeof(Record)) {
          Record r;
          std::memcpy(&r, buffer_ + used, sizeof r);
          used += sizeof r;
          const std::chrono::steady_clock::time_point at{std::chrono::nanoseconds(r.at_ns)};
          SignalEvent event{r.signo, r.code, r.pid, at};
          if (handler_) handler_(event);
          if (!open_) return;  // the handler closed the watch
        }
        std::memmove(buffer_, buffer_ + used, have_ - used);
        have_ -= used;
        read_next();
      });
}

}  // namespace hvdrun::launcher
