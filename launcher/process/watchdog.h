// Watchdog process: guarantees that no worker, nor any process in a worker's process group,
// outlives the launcher, even when the launcher is SIGKILLed.
//
// Design. Watchdog::start() forks a small process while the launcher is still single
// threaded, before any worker pipe exists. The watchdog keeps only the read end of a pipe
// (fds 0-2 on /dev/null, every other fd closed), moves to its own process group and ignores
// SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGPIPE, so a Ctrl-C or a signal to the launcher's
// terminal process group does not reach it. The launcher writes "+<pgid>\n" for each worker
// group it starts, "-<pgid>\n" for a group known to be empty, and "done\n" when the job has
// ended and every group was dealt with. When the pipe reaches end-of-file without "done" (the
// launcher died: its write end, close-on-exec, was held by nobody else), the watchdog
// SIGKILLs every recorded process group and exits; after "done" it exits at once. So the
// watchdog never outlives the launcher by more than the time of those kill() calls.
// PR_SET_PDEATHSIG on each worker covers the worker itself; the watchdog covers the
// worker's own children. A process that leaves its group (setsid) is not covered.
//
// Thread rules: used from the launcher's io thread only.
#pragma once

#include <sys/types.h>

#include "launcher/process/process.h"

namespace hvdrun::launcher {

class Watchdog {
 public:
  // Forks the watchdog process. Call before any thread is created. Throws hvdrun::Error.
  static Watchdog start();
  Watchdog() = default;
  ~Watchdog();  // disarm()
  Watchdog(Watchdog&&) noexcept = default;
  Watchdog& operator=(Watchdog&&) noexcept = default;

  void watch(pid_t pgid);   // a worker group was started
  void forget(pid_t pgid);  // the group is empty: its id may be reused by the system
  // The job ended cleanly: tell the watchdog to exit without killing, and reap it.
  void disarm() noexcept;

 private:
  void send(const std::string& record) noexcept;
  UniqueFd pipe_;
  Child process_;
};

}  // namespace hvdrun::launcher
