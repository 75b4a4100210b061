// SignalWatch: the signals sent to hvdrun itself, each with who sent it, delivered on the
// launcher's io_context. Asio's signal_set says only which signal came; the job needs more:
// a second SIGTERM from the same `timeout` within microseconds is one signal, a second Ctrl-C
// from the terminal is a person who wants the job ended now, and the summary names the sender.
// The handler (SA_SIGINFO) writes a fixed-size record into a pipe the io_context reads.
// One SignalWatch at a time; it restores the previous dispositions when closed or destroyed.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/unique_fd.h"

namespace hvdrun::launcher {

struct SignalEvent {
  int signo = 0;
  int code = 0;      // si_code: SI_USER for kill(2), SI_KERNEL for the terminal's keys
  pid_t sender = 0;  // si_pid where code says a process sent it, else 0
  std::chrono::steady_clock::time_point at;  // when it came (in the handler)

  // The terminal's keys (Ctrl-C, Ctrl-\) and a hang-up come from the kernel, not a process.
  bool from_kernel() const noexcept;
  // Slurm's step daemon sent it: every process of the step, the workers too, has it already
  // (signal_sender.h).
  bool from_step_daemon() const;
  // "pid 4321 (timeout)", "the terminal", or "" when unknown.
  std::string sender_text() const;
  // "SIGTERM from pid 4321 (timeout)", "SIGINT from the terminal", "SIGHUP".
  std::string describe() const;
};

// The signals a job handles (INT, TERM, HUP, QUIT, USR1, USR2): blocked from the start of
// main() until a SignalWatch takes them (its constructor unblocks the ones it watches, and what
// came meanwhile is delivered to it), or unblocked on a path that runs no job.
void block_job_signals() noexcept;
void unblock_job_signals() noexcept;  // for a path that runs no job (a pending one acts now)

// For code that waits on them another way (asio's signal_set, before the job): the job signals
// unblocked for its life, then the mask as it was.
class JobSignalsUnblocked {
 public:
  JobSignalsUnblocked() noexcept;
  ~JobSignalsUnblocked();
  JobSignalsUnblocked(const JobSignalsUnblocked&) = delete;
  JobSignalsUnblocked& operator=(const JobSignalsUnblocked&) = delete;

 private:
  sigset_t previous_;
};

class SignalWatch {
 public:
  using Handler = std::function<void(const SignalEvent&)>;

  // Installs the handlers, then unblocks `signals` (inherited blocked, or blocked by
  // block_job_signals()): one pending now is delivered. Throws hvdrun::Error when the pipe
  // cannot be made or another SignalWatch is open.
  SignalWatch(boost::asio::io_context& io, std::vector<int> signals);
  ~SignalWatch();
  SignalWatch(const SignalWatch&) = delete;
  SignalWatch& operator=(const SignalWatch&) = delete;

  // Calls `handler` for every signal from now on, until close().
  void start(Handler handler);
  // Restores the dispositions found at construction; later signals act as they did before.
  void close();

 private:
  void read_next();

  UniqueFd read_end_;
  UniqueFd write_end_;
  boost::asio::posix::stream_descriptor reader_;
  std::map<int, struct sigaction> previous_;
  Handler handler_;
  unsigned char buffer_[256]{};
  std::size_t have_ = 0;
  bool open_ = true;
};

}  // namespace hvdrun::launcher
