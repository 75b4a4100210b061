// AgentPortSpawner (agent_port_spawner.h): the agent port, the srun step if any, and a link per
// node waiting for its agent.
#include "launcher/remote/agent_port_spawner.h"

#include <netdb.h>

#include "common/interfaces.h"
#include "hvdrun/error.h"

namespace hvdrun::launcher::remote {

using Clock = std::chrono::steady_clock;
namespace {

// The first IPv4 address of `name`, or empty.
std::string ipv4_of(const std::string& name) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(name.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) return {};
  char text[64] = {};
  ::getnameinfo(found->ai_addr, found->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST);
  ::freeaddrinfo(found);
  return text;
}

}  // namespace

AgentPortSpawner::AgentPortSpawner(std::vector<RemoteHost> hosts, RemoteSpawnOptions options,
                                   RemoteEvents events, AgentPortOptions port,
                                   std::optional<SrunOptions> srun)
    : HostSpawner(std::move(options), std::move(events)) {
  std::vector<std::string> nodes = port.nodes;
  if (nodes.empty()) {
    for (const auto& host : hosts) nodes.push_back(host.name);
  }
  if (nodes.empty() || nodes.size() != hosts.size()) {
    throw Error("agent port: " + std::to_string(nodes.size()) + " node names for " +
                std::to_string(hosts.size()) + " hosts");
  }
  listener_ = std::make_unique<AgentListener>(port.bind, port.secret, nodes, port.port,
                                              srun ? "srun" : "per-node");
  secret_ = port.secret;
  srun_ = std::move(srun);
  if (srun_) {
    std::string address = port.connect_address;
    if (address.empty()) {
      const std::string first = ipv4_of(hosts.front().name);
      address = first.empty() ? std::string() : route_source_address(first);
      if (address.empty()) {
        throw Error("--launcher slurm: no route from this machine to node '" + hosts.front().name +
                    "' (cannot resolve it, or no IPv4 route): give --rendezvous-addr");
      }
    }
    endpoint_ = address + ":" + std::to_string(listener_->port());
    start_step(nodes);
  }
  for (const auto& node : nodes) {
    nodes_.push_back(node);
    add_link([this, node](ssh::SocketCanceller& canceller, Clock::time_point deadline) {
      AgentConnection connection = listener_->wait_for(node, deadline, canceller);
      connected(node);
      return connection;
    });
  }
}

void AgentPortSpawner::start_step(const std::vector<std::string>& nodes) {
  auto srun = std::make_unique<SrunStep>(
      *srun_, nodes, this->options().agent_path, endpoint_, secret_, this->options().start_timeout,
      [this, nodes](const std::string& how) {
        listener_->fail(nodes, how + " before the node agent of this host connected");
      });
  srun_->external_launcher = srun->external_launcher();  // asked once
  std::lock_guard lock(steps_mutex_);
  steps_.push_back({std::move(srun), std::set<std::string>(nodes.begin(), nodes.end())});
}

void AgentPortSpawner::connected(const std::string& node) {
  std::lock_guard lock(steps_mutex_);
  for (auto& step : steps_) {
    if (step.waiting.erase(node) && step.waiting.empty()) step.srun->detach();
  }
}

AgentPortSpawner::~AgentPortSpawner() {
  // An agent told to come again (the job after --preflight's probes) finds the port closed,
  // not this listener, until the next run's opens.
  listener_->close_port();
  close_links();  // the agents see their connections close and end (and their steps with them)
  steps_.clear();
  listener_.reset();
}

void AgentPortSpawner::lost(std::size_t host) {
  if (const std::string& node = nodes_.at(host); !node.empty()) listener_->expect_again(node);
}

std::size_t AgentPortSpawner::reconnect(std::size_t host) {
  const std::string node = nodes_.at(host);
  if (!node.empty()) {
    listener_->expect_again(node);
    if (srun_) {
      try {
        start_step({node});
      } catch (const Error& e) {
        listener_->fail({node}, e.what());
      }
    }
  }
  nodes_.push_back(node);
  return HostSpawner::reconnect(host);
}

std::size_t AgentPortSpawner::add_host(RemoteHost host) {
  nodes_.emplace_back();
  return add_link([name = host.name](ssh::SocketCanceller&, Clock::time_point) -> AgentConnection {
    throw Error("host '" + name +
                "' came from the discovery script: only the hosts whose node agents connect "
                "to hvdrun (a Slurm allocation's nodes, --nnodes) can run workers here");
  });
}

}  // namespace hvdrun::launcher::remote
