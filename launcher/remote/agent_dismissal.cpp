// The node agents' dismissal (agent_dismissal.h).
#include "launcher/remote/agent_dismissal.h"

#include "hvdrun/error.h"
#include "launcher/agent/agent_protocol.h"
#include "launcher/remote/agent_listener.h"
#include "launcher/remote/agent_transport.h"

namespace hvdrun::launcher::remote {

using Clock = std::chrono::steady_clock;

std::vector<std::string> dismiss_agents(const std::string& secret, std::uint16_t port,
                                        const std::vector<std::string>& nodes, int status,
                                        std::chrono::milliseconds timeout) {
  AgentListener listener("0.0.0.0", secret, nodes, port, "per-node");
  const auto deadline = Clock::now() + timeout;
  std::vector<std::string> missing;
  for (const auto& node : nodes) {
    ssh::SocketCanceller canceller;
    try {
      const AgentConnection agent = listener.wait_for(node, deadline, canceller);
      agent.transport->write(agent::encode(agent::JobEndFrame{status, false}));
      // A few bytes into an empty socket: one step writes them (it reads what came, ignored).
      for (int i = 0; i < 8 && agent.transport->step([](StreamKind, std::string_view) {}); ++i) {
      }
    } catch (const Error&) {
      missing.push_back(node);
    }
  }  // each connection closed once its status went out: the agent exits with it
  return missing;
}

}  // namespace hvdrun::launcher::remote
