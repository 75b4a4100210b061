// The byte stream between the launcher and one host's node agent, whatever carries it: an SSH
// channel running the agent (ssh_agent_transport.h) or the TCP connection an agent made to
// the launcher (tcp_agent_transport.h). Driven without blocking by the link loop's thread.
#pragma once

#include <poll.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "launcher/agent/remote_exit.h"

namespace hvdrun::launcher::remote {

class AgentTransport {
 public:
  // kStdout: the agent's protocol stream; kStderr: its diagnostics (SSH only).
  using Sink = std::function<void(StreamKind, std::string_view)>;

  virtual ~AgentTransport() = default;
  // "hvdt-h1 (10.213.0.11:22)": the host in messages.
  virtual const std::string& where() const = 0;
  // Writes what is queued and reads what arrived into `sink`; true if anything moved.
  virtual bool step(const Sink& sink) = 0;
  virtual void write(std::string_view bytes) = 0;
  // Why the stream is over (the agent ended, the connection broke); nullopt while it goes on.
  virtual std::optional<std::string> ended() const = 0;
  // What to poll for; called once a loop pass (an SSH transport sends its keepalive here).
  // `timeout_ms` may be lowered.
  virtual pollfd poll_entry(int& timeout_ms) = 0;
};

}  // namespace hvdrun::launcher::remote
