// Small libssh2 helpers shared by the SSH files: one-time library initialisation, the
// session's last error as text, the mapping of a libssh2 error code to an SshError, and the
// handshake, and how their messages show a file.
#pragma once

#include <libssh2.h>

#include <string>

#include "launcher/ssh/ssh_error.h"

namespace hvdrun::launcher::ssh {

// libssh2_init(0) exactly once per process (thread-safe); call before creating a session.
void ensure_libssh2_initialized();

// libssh2_session_handshake. libssh2 (1.10, Debian 12's) frees the server's host key object
// only for a session whose key exchange completed: a handshake that fails or is cancelled after
// the host key arrived leaves that object (about 1 KiB) behind when the session is freed. Under
// LeakSanitizer what the handshake allocates (key exchange state, crypto contexts) is not
// reported, so that a cancelled connection does not fail a sanitized run; the session itself
// and what later calls allocate stay checked.
int session_handshake(LIBSSH2_SESSION* session, int socket);

// "message (code)" of the session's last error.
std::string last_error(LIBSSH2_SESSION* session);

// Throws the SshError for a failed libssh2 call: timeout -> kTimeout, socket errors -> kLost
// (or kHandshake when `during_setup`), others -> `fallback`. `what` says what failed, with the
// host: "SSH handshake with hvdt-h1 (10.213.0.11:22)".
[[noreturn]] void throw_libssh2_error(LIBSSH2_SESSION* session, int rc, const std::string& what,
                                      SshFailure fallback);

// A path under `home` as "~/...", as messages show key and known_hosts files; others as given.
std::string home_relative(const std::string& path, const std::string& home);

}  // namespace hvdrun::launcher::ssh
