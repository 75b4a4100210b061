// An SSH session to one host: the blocking connect sequence (TCP, handshake, host key check,
// authentication), each phase timed and all bounded by one deadline. A session is used by one
// thread at a time.
#pragma once

#include <libssh2.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "launcher/ssh/config/ssh_options.h"
#include "launcher/ssh/ssh_socket.h"

namespace hvdrun::launcher::ssh {

// Owns the TCP socket and the libssh2 session. Move-only. Destruction disconnects (bounded by
// 1 s) and frees the session; channels of the session must be freed before.
class SshSession {
 public:
  // Connects and authenticates before `deadline`; the session is left in blocking mode.
  // Throws SshError naming the host. `canceller` (optional, must outlive the session) lets
  // another thread abort the connect and later shut the socket down.
  static SshSession connect(const SshTarget& target, const SshOptions& options,
                            Clock::time_point deadline, SocketCanceller* canceller = nullptr);

  SshSession(SshSession&&) noexcept;
  SshSession& operator=(SshSession&&) = delete;
  ~SshSession();

  LIBSSH2_SESSION* get() const noexcept;
  int fd() const noexcept;
  const std::string& where() const noexcept;       // "hvdt-h1 (10.213.0.11:22)"
  const std::string& local_addr() const noexcept;  // this end's address: "10.213.0.1"
  const std::string& peer() const noexcept;        // "10.213.0.11:22"
  const std::vector<SshPhase>& phases() const noexcept;
  const std::string& host_key_note() const noexcept;  // e.g. "added ED25519 key ... to ..."

 private:
  struct State;
  explicit SshSession(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

struct ExecResult {
  std::string out;
  std::string err;
  int exit_code = -1;       // -1 when the command died by a signal
  std::string exit_signal;  // "TERM", ... when it did
};

// Runs one command to its end over `session` (probes, tests): writes `input` to its stdin,
// closes it, collects stdout/stderr and the exit. Throws SshError (kTimeout at `deadline`).
ExecResult exec_command(SshSession& session, const std::string& command, const std::string& input,
                        Clock::time_point deadline);

}  // namespace hvdrun::launcher::ssh
