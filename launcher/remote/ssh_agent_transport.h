// The agent's stream over SSH: one channel of an established session running
// `hvdrun --node-agent` (its stdin and stdout: the protocol; its stderr: diagnostics).
#pragma once

#include <memory>

#include "launcher/remote/agent_transport.h"
#include "launcher/ssh/ssh_session.h"

namespace hvdrun::launcher::ssh {
class RemoteCommand;
}  // namespace hvdrun::launcher::ssh

namespace hvdrun::launcher::remote {

class SshAgentTransport final : public AgentTransport {
 public:
  SshAgentTransport(ssh::SshSession session, const std::string& command,
                    std::chrono::seconds keepalive);
  ~SshAgentTransport() override;  // the channel is freed before the session

  const std::string& where() const override { return session_.where(); }
  bool step(const Sink& sink) override;
  void write(std::string_view bytes) override;
  std::optional<std::string> ended() const override;
  pollfd poll_entry(int& timeout_ms) override;
  ssh::SshSession& session() { return session_; }

 private:
  ssh::SshSession session_;
  std::unique_ptr<ssh::RemoteCommand> command_;  // after the session: destroyed first
  std::chrono::seconds keepalive_;
};

}  // namespace hvdrun::launcher::remote
