// Small libssh2 helpers shared by the SSH files: one-time library initialisation, the
// session's last error as text, and the mapping of a libssh2 error code to an SshError.
#pragma once

#include <libssh2.h>

#include <string>

#include "launcher/ssh/ssh_error.h"

namespace hvdrun::launcher::ssh {

// libssh2_init(0) exactly once per process (thread-safe); call before creating a session.
void ensure_libssh2_initialized();

// "message (code)" of the session's last error.
std::string last_error(LIBSSH2_SESSION* session);

// Throws the SshError for a failed libssh2 call: timeout -> kTimeout, socket errors -> kLost
// (or kHandshake when `during_setup`), others -> `fallback`. `what` says what failed, with the
// host: "SSH handshake with hvdt-h1 (10.213.0.11:22)".
[[noreturn]] void throw_libssh2_error(LIBSSH2_SESSION* session, int rc, const std::string& what,
                                      SshFailure fallback);

}  // namespace hvdrun::launcher::ssh
