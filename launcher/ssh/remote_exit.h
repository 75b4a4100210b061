// How a remote command ended, as the launcher sees it through its SSH channel, and which of
// its output streams bytes came from.
#pragma once

#include <string>

namespace hvdrun::launcher::ssh {

enum class OutputStream { kStdout, kStderr };

struct RemoteExit {
  enum class Kind {
    kExited,          // value = exit code
    kSignaled,        // value = signal number (0 if the name is unknown; see message)
    kFailedToStart,   // the host or the channel failed before the command ran; see message
    kLostConnection,  // the SSH connection broke while the command ran; see message
  };
  Kind kind = Kind::kExited;
  int value = 0;
  std::string message;  // failures: what happened, naming the host; kSignaled: signal name

  bool success() const noexcept { return kind == Kind::kExited && value == 0; }
  // The shell's convention for exited/signaled; 255 (as ssh(1)) for the failures.
  int shell_code() const noexcept;
  // "exit code 3", "killed by signal SIGTERM (15)", or the failure message.
  std::string describe() const;
};

// The number of an SSH signal name ("TERM", "KILL"...; RFC 4254 names), 0 if unknown.
int signal_from_ssh_name(const std::string& name);

}  // namespace hvdrun::launcher::ssh
