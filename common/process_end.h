// How a process ended, local or remote: the one description the launcher, the SSH layer and
// the job summary share. Pure data and formatting.
#pragma once

#include <string>

namespace hvdrun {

struct ProcessEnd {
  enum class Kind {
    kExited,          // value = exit code
    kSignaled,        // value = signal number (0 when a remote host named an unknown signal)
    kFailedToStart,   // it never ran: exec failed remotely, the host or channel failed first
    kLostConnection,  // the SSH connection to its host broke while it ran
  };
  Kind kind = Kind::kExited;
  int value = 0;
  // kFailedToStart / kLostConnection: what happened, naming the host. kSignaled with value 0:
  // the signal's name as the remote host gave it. Otherwise an extra cause ("cannot run ...").
  std::string message;
  int pid = 0;  // a local process's pid, for messages; 0 for remote ones

  static ProcessEnd exited(int code, std::string cause = {});
  static ProcessEnd signaled(int signo, std::string cause = {});
  // From a waitpid() status.
  static ProcessEnd decode(int wait_status);
  static ProcessEnd failed_to_start(std::string message);
  static ProcessEnd lost_connection(std::string message);

  bool success() const noexcept { return kind == Kind::kExited && value == 0; }
  bool ran() const noexcept { return kind == Kind::kExited || kind == Kind::kSignaled; }
  // The shell's convention: the exit code, 128 + signal number; 255 (as ssh(1) reports its
  // own failures) for a process that never ran, was lost, or died of an unnamed signal.
  int shell_code() const noexcept;
  // "exit code 3", "killed by signal SIGKILL (9)" (with " (cause)"), or the failure message.
  std::string describe() const;
  // "exited with code 3", "was killed by ...", "failed: <message>": for the first-failure note.
  std::string what_happened() const;
  bool operator==(const ProcessEnd&) const = default;
};

// "SIGSEGV" for 11; "signal 99" for numbers without a name.
std::string signal_name(int signo);

}  // namespace hvdrun
