// The watchdog process that SIGKILLs every worker process group if the launcher dies
// (design in watchdog.h).
#include "launcher/process/watchdog.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "hvdrun/error.h"
#include "launcher/process/signals_blocked.h"

namespace hvdrun::launcher {
namespace {

// Entered with every signal blocked (SignalsBlocked in start): no handler inherited from the
// launcher runs here; every other signal gets its default action before the mask is cleared.
void detach_from_launcher(int read_fd) noexcept {
  ::setpgid(0, 0);
  for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU}) {
    ::signal(sig, SIG_IGN);
  }
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::prctl(PR_SET_NAME, "hvdrun-watchdog");
  int devnull = ::open("/dev/null", O_RDWR);
  for (int fd = 0; fd <= 2; ++fd) ::dup2(devnull, fd);
  ::dup2(read_fd, 3);
  ::close_range(4, ~0U, 0);
}

void apply_record(std::string_view line, std::vector<pid_t>& groups, bool& done) {
  if (line == "done") {
    done = true;
  } else if (line.size() > 1 && (line[0] == '+' || line[0] == '-')) {
    std::string digits(line.substr(1));
    pid_t pgid = static_cast<pid_t>(std::strtol(digits.c_str(), nullptr, 10));
    if (pgid <= 1) return;
    if (line[0] == '+') {
      groups.push_back(pgid);
    } else {
      std::erase(groups, pgid);
    }
  }
}

// The watchdog's whole life: read records until EOF, then kill what remains unless "done".
[[noreturn]] void watchdog_main(int read_fd) noexcept {
  detach_from_launcher(read_fd);
  std::vector<pid_t> groups;
  std::string pending;
  bool done = false;
  char buffer[4096];
  while (!done) {
    ssize_t got = ::read(3, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    pending.append(buffer, static_cast<std::size_t>(got));
    std::size_t newline;
    while (!done && (newline = pending.find('\n')) != std::string::npos) {
      apply_record(std::string_view(pending).substr(0, newline), groups, done);
      pending.erase(0, newline + 1);
    }
  }
  if (!done) {
    const pid_t session = ::getsid(0);
    for (pid_t pgid : groups) {
      // A leader in another session means the id was given to someone else's group.
      const pid_t leader_session = ::getsid(pgid);
      if (leader_session >= 0 && leader_session != session) continue;
      ::kill(-pgid, SIGKILL);
    }
  }
  ::_exit(0);
}

}  // namespace

Watchdog Watchdog::start() {
  Pipe pipe = make_pipe();
  pid_t pid;
  int fork_errno;
  {
    const SignalsBlocked blocked;
    pid = ::fork();
    if (pid == 0) {
      pipe.write.reset();
      watchdog_main(pipe.read.get());
    }
    fork_errno = errno;
  }
  if (pid < 0) {
    throw SystemError(std::string("fork of the watchdog process failed: ") + ::strerror(fork_errno),
                      "fork", fork_errno);
  }
  Watchdog watchdog;
  watchdog.pipe_ = std::move(pipe.write);
  watchdog.process_ = Child(pid);
  return watchdog;
}

Watchdog::~Watchdog() {
  disarm();
}

void Watchdog::send(const std::string& record) noexcept {
  if (!pipe_.valid()) return;
  std::size_t sent = 0;
  while (sent < record.size()) {
    ssize_t n = ::write(pipe_.get(), record.data() + sent, record.size() - sent);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the watchdog is gone (EPIPE); nothing more to do
    sent += static_cast<std::size_t>(n);
  }
}

void Watchdog::watch(pid_t pgid) {
  send("+" + std::to_string(pgid) + "\n");
}

void Watchdog::forget(pid_t pgid) {
  send("-" + std::to_string(pgid) + "\n");
}

void Watchdog::disarm() noexcept {
  if (!pipe_.valid()) return;
  send("done\n");
  pipe_.reset();
  if (process_.pid() > 0 && !process_.reaped()) {
    try {
      process_.wait();
    } catch (...) {
    }
  }
}

}  // namespace hvdrun::launcher
