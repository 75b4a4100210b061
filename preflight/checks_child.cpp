// The probe's checks in a child process (checks_child.h).
#include "preflight/checks_child.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "preflight/report_line.h"

namespace hvdrun::preflight {

int run_checks_in_child(const std::function<int()>& checks, const std::string& report) {
  std::fflush(stdout);
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) return checks();
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the launcher's SIGKILL of the probe ends it too
    if (::getppid() != parent) ::_exit(3);
    const int status = checks();
    std::fflush(stdout);
    ::_exit(status);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  const int signo = WTERMSIG(status);
  // Ended by the launcher (its group's SIGTERM or SIGKILL): no news. Crashed: said.
  if (signo != SIGSEGV && signo != SIGBUS && signo != SIGILL && signo != SIGFPE &&
      signo != SIGABRT && signo != SIGSYS && signo != SIGTRAP) {
    return 128 + signo;
  }
  const char* name = sigabbrev_np(signo);
  const std::string line =
      report + report_field(key::kCrashed, std::string("SIG") + (name ? name : "UNKNOWN"));
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  return 3;
}

}  // namespace hvdrun::preflight
