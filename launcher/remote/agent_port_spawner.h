// AgentPortSpawner: hosts whose node agents connect to hvdrun's agent port (agent_listener.h)
// instead of hvdrun connecting to them: the nodes of a Slurm allocation, their agents started
// by one srun step (srun_step.h), or the nodes of a per-node start (`--nnodes`, each node
// running hvdrun itself: Kubernetes), whose agents come by themselves. Each host's link waits
// for its node's agent until the start deadline; a host found later by a discovery script
// has no agent and fails, saying so. A node whose agent was lost gets a new link that waits
// for its next agent: on Slurm one that a new srun step (for that node alone) starts.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launcher/remote/agent_listener.h"
#include "launcher/remote/remote_spawn.h"
#include "launcher/remote/srun_step.h"

namespace hvdrun::launcher::remote {

struct AgentPortOptions {
  std::string secret;            // what the agents prove
  std::string bind = "0.0.0.0";  // the agent port's address
  std::uint16_t port = 0;        // 0: any free port
  // Where srun's agents connect: this machine's address on the route to the nodes (empty: the
  // route to the first host).
  std::string connect_address;
  // The name each host's agent gives in its Hello (empty: the hosts' names).
  std::vector<std::string> nodes;
};

class AgentPortSpawner final : public HostSpawner {
 public:
  // Opens the agent port and, with `srun`, starts the step at once. Throws hvdrun::Error when
  // the port cannot be opened or srun cannot be run.
  AgentPortSpawner(std::vector<RemoteHost> hosts, RemoteSpawnOptions options, RemoteEvents events,
                   AgentPortOptions port, std::optional<SrunOptions> srun);
  ~AgentPortSpawner() override;
  std::size_t add_host(RemoteHost host) override;
  std::size_t reconnect(std::size_t host) override;
  void lost(std::size_t host) override;

 private:
  // Starts a step of agents on `nodes`; its early end fails their waits.
  void start_step(const std::vector<std::string>& nodes);
  // `node`'s agent connected: a step all of whose agents did lets go of its srun.
  void connected(const std::string& node);

  struct Step {
    std::unique_ptr<SrunStep> srun;
    std::set<std::string> waiting;  // its nodes whose agents have not connected yet
  };

  std::vector<std::string> nodes_;  // by link: the node whose agent it waits for ("": none)
  std::optional<SrunOptions> srun_;
  std::string endpoint_;  // where srun's agents connect
  std::string secret_;
  std::unique_ptr<AgentListener> listener_;
  std::mutex steps_mutex_;   // connected() runs on the connect threads
  std::vector<Step> steps_;  // the first, then one per lost node
};

}  // namespace hvdrun::launcher::remote
