// The agent's stream over an SSH channel (ssh_agent_transport.h).
#include "launcher/remote/ssh_agent_transport.h"

#include <libssh2.h>

#include "launcher/ssh/ssh_channel.h"

namespace hvdrun::launcher::remote {

SshAgentTransport::SshAgentTransport(ssh::SshSession session, const std::string& command,
                                     std::chrono::seconds keepalive)
    : session_(std::move(session)), keepalive_(keepalive) {
  libssh2_session_set_blocking(session_.get(), 0);
  command_ = std::make_unique<ssh::RemoteCommand>(session_.get(), session_.where(), command, "");
}

SshAgentTransport::~SshAgentTransport() {
  libssh2_session_set_blocking(session_.get(), 1);
  libssh2_session_set_timeout(session_.get(), 1000);
  command_.reset();
}

bool SshAgentTransport::step(const Sink& sink) {
  return command_->step(true, sink);
}

void SshAgentTransport::write(std::string_view bytes) {
  command_->write(bytes);
}

std::optional<std::string> SshAgentTransport::ended() const {
  if (command_->session_failed()) return command_->result().message;
  if (command_->state() == ssh::RemoteCommand::State::kDone) {
    return "the node agent on " + session_.where() + " ended (" + command_->result().describe() +
           ")";
  }
  return std::nullopt;
}

pollfd SshAgentTransport::poll_entry(int& timeout_ms) {
  int next_keepalive = static_cast<int>(keepalive_.count());
  libssh2_keepalive_send(session_.get(), &next_keepalive);
  timeout_ms = std::min(timeout_ms, std::max(1, next_keepalive) * 1000);
  const int directions = libssh2_session_block_directions(session_.get());
  return {
      session_.fd(),
      static_cast<short>(POLLIN | ((directions & LIBSSH2_SESSION_BLOCK_OUTBOUND) ? POLLOUT : 0)),
      0};
}

}  // namespace hvdrun::launcher::remote
