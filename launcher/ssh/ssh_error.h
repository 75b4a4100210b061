// SshError: what went wrong with one SSH host, by kind, so that callers can react (and tests
// can check) without parsing messages. The message names the host and says what to do.
#pragma once

#include <string>

#include "hvdrun/error.h"

namespace hvdrun::launcher::ssh {

enum class SshFailure {
  kResolve,      // the name does not resolve
  kUnreachable,  // no route / network unreachable
  kRefused,      // nothing listens on the port (sshd stopped, wrong port)
  kTimeout,      // connect, handshake or authentication passed the deadline
  kHandshake,    // SSH protocol negotiation failed
  kHostKey,      // host key mismatch, or unknown with policy "yes"
  kAuth,         // no authentication method was accepted
  kChannel,      // opening a channel or starting the remote command failed
  kLost,         // the connection broke after it was established
  kCancelled,    // the caller shut the connection down
};

class SshError : public NetworkError {
 public:
  SshError(SshFailure failure, const std::string& message)
      : NetworkError(message), failure_(failure) {}
  SshFailure failure() const noexcept { return failure_; }
  // A layer that adds context keeps the kind and the failure.
  [[noreturn]] void rethrow_as(std::string message) const override {
    throw SshError(failure_, message);
  }

 private:
  SshFailure failure_;
};

}  // namespace hvdrun::launcher::ssh
