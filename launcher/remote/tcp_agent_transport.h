// The agent's stream over the TCP connection it made to the launcher (after the handshake,
// agent_auth.h). `already_read`: what the listener read to learn which host the agent is (its
// preamble and Hello), delivered first.
#pragma once

#include "common/unique_fd.h"
#include "launcher/remote/agent_transport.h"

namespace hvdrun::launcher::remote {

class TcpAgentTransport final : public AgentTransport {
 public:
  TcpAgentTransport(UniqueFd fd, std::string where, std::string already_read);

  const std::string& where() const override { return where_; }
  bool step(const Sink& sink) override;
  void write(std::string_view bytes) override { pending_.append(bytes); }
  std::optional<std::string> ended() const override { return ended_; }
  pollfd poll_entry(int& timeout_ms) override;

 private:
  UniqueFd fd_;
  std::string where_;
  std::string already_read_;
  std::string pending_;  // to the agent
  std::optional<std::string> ended_;
};

}  // namespace hvdrun::launcher::remote
