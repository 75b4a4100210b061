// Local processes: the RAII owner of children, the fork/exec spawner of workers
// (own process group, parent-death signal, stdout/stderr on pipes, exec errors reported
// through a close-on-exec pipe), reaped into ProcessEnd (common/process_end.h).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "common/process_end.h"
#include "common/unique_fd.h"

namespace hvdrun::launcher {

// A child process that leads its own process group (pgid == pid). If destroyed before it
// was reaped, SIGKILLs its whole group and reaps it. Move-only; used on one thread.
// Whether a signal sent to a worker goes to its whole process group: the ones that end it
// (SIGTERM, SIGKILL) and SIGCONT do; a forwarded warning (SIGUSR1, SIGHUP, ...) goes to the
// program alone, so that helpers it started (a DataLoader's workers) do not die of it.
bool signals_group(int signo) noexcept;

class Child {
 public:
  Child() = default;
  explicit Child(pid_t pid) noexcept : pid_(pid) {}
  ~Child();
  Child(Child&& other) noexcept;
  Child& operator=(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const noexcept { return pid_; }
  pid_t pgid() const noexcept { return pid_; }
  bool reaped() const noexcept { return reaped_; }
  // waitpid(WNOHANG) in an EINTR loop: the status if the child has ended, else nullopt.
  std::optional<ProcessEnd> try_reap();
  // Blocking waitpid in an EINTR loop.
  ProcessEnd wait();
  // kill(-pgid, signo). Returns 0 or the errno (ESRCH: the group is empty).
  int signal_group(int signo) const noexcept;
  // kill(pid, signo): the program alone, not its children (nothing once it is reaped).
  int signal_process(int signo) const noexcept;
  // Gives up ownership: returns the pid, which the caller now reaps (and kills) itself.
  pid_t release() noexcept;

 private:
  void kill_and_reap() noexcept;
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// A started child: stdout/stderr read ends, and the read end of its exec-report pipe.
struct Spawned {
  Child child;
  UniqueFd out;
  UniqueFd err;
  UniqueFd exec_report;
};

struct SpawnOptions {
  bool capture_output = true;            // false: the child inherits the launcher's stdout/stderr
  const sigset_t* child_mask = nullptr;  // the child's signal mask; nullptr: empty
  int stdin_fd = -1;                     // the child's stdin; -1: /dev/null
};

// Starts argv[0] (searched in the PATH of `env`, else the launcher's PATH, if it has no '/')
// with exactly `env` ("NAME=VALUE"). The child: stdin from /dev/null (or the options'),
// stdout/stderr on pipes, its own process group, SIGKILL when the launcher dies, default
// signal dispositions and the options' mask, every other fd closed on exec. Does not wait for
// the exec: call exec_error() once every child is started, so that N spawns run back to back.
Spawned spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
              const SpawnOptions& options = {});

// Waits (bounded) until the child has exec'd or failed to: 0, or the errno of the failed
// exec (the child then exits with status 127). Closes the report pipe.
int exec_error(Spawned& spawned);

// The command as a POSIX shell would read it back: words quoted only where needed. For
// --verbose; never given an environment.
std::string shell_command_line(const std::vector<std::string>& argv);

// Makes sure fds 0, 1 and 2 are open, so pipes never land on them: a closed one is put on
// /dev/null read-only, where a write still fails with EBADF (output to a closed stdout is an
// error, not a silent loss).
void ensure_standard_fds() noexcept;

}  // namespace hvdrun::launcher
