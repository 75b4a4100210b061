// ProcessEnd (process_end.h).
#include "common/process_end.h"

#include <string.h>
#include <sys/wait.h>

#include <utility>

namespace hvdrun {

ProcessEnd ProcessEnd::exited(int code, std::string cause) {
  return {Kind::kExited, code, std::move(cause)};
}

ProcessEnd ProcessEnd::signaled(int signo, std::string cause) {
  return {Kind::kSignaled, signo, std::move(cause)};
}

ProcessEnd ProcessEnd::decode(int wait_status) {
  if (WIFSIGNALED(wait_status)) return signaled(WTERMSIG(wait_status));
  return exited(WEXITSTATUS(wait_status));
}

ProcessEnd ProcessEnd::failed_to_start(std::string message) {
  return {Kind::kFailedToStart, 0, std::move(message)};
}

ProcessEnd ProcessEnd::lost_connection(std::string message) {
  return {Kind::kLostConnection, 0, std::move(message)};
}

int ProcessEnd::shell_code() const noexcept {
  if (kind == Kind::kExited) return value;
  if (kind == Kind::kSignaled && value != 0) return 128 + value;
  return 255;
}

std::string ProcessEnd::describe() const {
  const std::string cause = message.empty() ? "" : " (" + message + ")";
  switch (kind) {
    case Kind::kExited:
      return "exit code " + std::to_string(value) + cause;
    case Kind::kSignaled:
      if (value == 0) return "killed by signal SIG" + message;
      return "killed by signal " + signal_name(value) + " (" + std::to_string(value) + ")" + cause;
    case Kind::kFailedToStart:
    case Kind::kLostConnection:
      return message;
  }
  return message;
}

std::string ProcessEnd::what_happened() const {
  if (kind == Kind::kExited) return "exited with code " + std::to_string(value);
  if (kind == Kind::kSignaled) {
    if (value == 0) return "was killed by signal SIG" + message;
    return "was killed by signal " + signal_name(value) + " (" + std::to_string(value) + ")";
  }
  return "failed: " + message;
}

std::string signal_name(int signo) {
  const char* abbrev = ::sigabbrev_np(signo);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(signo);
}

}  // namespace hvdrun
