// libssh2 initialisation and error mapping (libssh2_util.h).
#include "launcher/ssh/libssh2_util.h"

#if defined(__SANITIZE_ADDRESS__)
#define HVDRUN_LEAK_CHECKS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define HVDRUN_LEAK_CHECKS 1
#endif
#endif
#ifdef HVDRUN_LEAK_CHECKS
#include <sanitizer/lsan_interface.h>
#endif

namespace hvdrun::launcher::ssh {
namespace {

struct LibraryGuard {
  LibraryGuard() { libssh2_init(0); }
  ~LibraryGuard() { libssh2_exit(); }
  LibraryGuard(const LibraryGuard&) = delete;
  LibraryGuard& operator=(const LibraryGuard&) = delete;
};

// Allocations of this thread are left out of leak reports while it lives (without leak
// checks: nothing).
struct LeakReportsPaused {
  LeakReportsPaused() {
#ifdef HVDRUN_LEAK_CHECKS
    __lsan_disable();
#endif
  }
  ~LeakReportsPaused() {
#ifdef HVDRUN_LEAK_CHECKS
    __lsan_enable();
#endif
  }
  LeakReportsPaused(const LeakReportsPaused&) = delete;
  LeakReportsPaused& operator=(const LeakReportsPaused&) = delete;
};

}  // namespace

int session_handshake(LIBSSH2_SESSION* session, int socket) {
  const LeakReportsPaused paused;
  return libssh2_session_handshake(session, socket);
}

void ensure_libssh2_initialized() {
  static const LibraryGuard guard;  // initialised once, thread-safe (C++11 statics)
}

std::string last_error(LIBSSH2_SESSION* session) {
  char* message = nullptr;
  int length = 0;
  const int code = libssh2_session_last_error(session, &message, &length, 0);
  std::string text = message != nullptr && length > 0 ? std::string(message, length) : "no detail";
  return text + " (libssh2 error " + std::to_string(code) + ")";
}

void throw_libssh2_error(LIBSSH2_SESSION* session, int rc, const std::string& what,
                         SshFailure fallback) {
  SshFailure failure = fallback;
  std::string hint;
  switch (rc) {
    case LIBSSH2_ERROR_TIMEOUT:
    case LIBSSH2_ERROR_SOCKET_TIMEOUT:
      failure = SshFailure::kTimeout;
      hint = " (the limit is --start-timeout)";
      break;
    case LIBSSH2_ERROR_SOCKET_SEND:
    case LIBSSH2_ERROR_SOCKET_RECV:
    case LIBSSH2_ERROR_SOCKET_DISCONNECT:
    case LIBSSH2_ERROR_SOCKET_NONE:
      failure = fallback == SshFailure::kHandshake ? SshFailure::kHandshake : SshFailure::kLost;
      hint = " (the connection was closed)";
      break;
    default:
      break;
  }
  throw SshError(failure, what + " failed: " + last_error(session) + hint);
}

std::string home_relative(const std::string& path, const std::string& home) {
  if (!home.empty() && path.starts_with(home + "/")) return "~" + path.substr(home.size());
  return path;
}

}  // namespace hvdrun::launcher::ssh
