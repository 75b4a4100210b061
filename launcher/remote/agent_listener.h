// AgentListener: the launcher's port for node agents that connect to it (started by srun, or
// by the nodes themselves). Connections are taken by an AuthenticatedAcceptor (the handshake,
// agent_auth.h, and the bounds that keep strangers from crowding agents out), then the agent's
// preamble and Hello (64 KiB and 10 s at most) name its node. The connection then goes to the
// host link waiting for that node (wait_for). An agent whose node is not one of the job's, or
// already has its agent, is sent the reason (a Refused frame) and closed; every refusal is
// logged (at most one line a second). The hosts' links wait in parallel, each for its own node.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "launcher/remote/authenticated_acceptor.h"
#include "launcher/remote/remote_spawn.h"

namespace hvdrun::launcher::remote {

using Clock = std::chrono::steady_clock;

class AgentListener {
 public:
  // Listens on `bind` (an IPv4 address; "0.0.0.0": every interface), `port` (0: any free
  // one). `starter` names what starts the agents in messages ("srun", "per-node"): "node-1
  // (per-node agent, 10.0.0.2:41234)". Throws hvdrun::Error naming the address if it cannot.
  AgentListener(const std::string& bind, std::string secret, const std::vector<std::string>& nodes,
                std::uint16_t port = 0, std::string starter = "node",
                AuthenticatedAcceptor::Limits limits = {});
  ~AgentListener();  // closes every connection not handed over, joins every thread
  AgentListener(const AgentListener&) = delete;
  AgentListener& operator=(const AgentListener&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  // The connection of `node`'s agent, once it came: blocks until then, `deadline` (a
  // TimeoutError), a cancel of `canceller`, or fail_all() (an Error with its message).
  AgentConnection wait_for(const std::string& node, Clock::time_point deadline,
                           const ssh::SocketCanceller& canceller);
  // Every wait for an agent of `nodes` not yet connected ends with `message` (its starter
  // ended); fail_all: of every node.
  void fail(const std::vector<std::string>& nodes, const std::string& message);
  void fail_all(const std::string& message);
  // Takes no more connections (the port is closed); those that came are still handed over.
  // Before the agents are told to come again to this port's next listener: none may reach
  // this one.
  void close_port();
  // `node`'s agent was lost: its next agent (a new srun step's, a restarted node's) is taken.
  void expect_again(const std::string& node);
  // Connections waiting for their proof now.
  std::size_t unproven() const { return acceptor_->unproven(); }

 private:
  struct Arrived {
    UniqueFd fd;
    std::string where, local_addr, remote_addr, already_read;
  };
  // On the acceptor's thread of a connection that proved the secret.
  void take(UniqueFd fd, const AuthenticatedAcceptor::Peer& peer);
  void log_refusal(const std::string& message);

  std::uint16_t port_ = 0;
  const std::string starter_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::map<std::string, std::optional<Arrived>> waiting_;  // node -> its connection, once here
  std::set<std::string> taken_;                            // nodes whose connection was handed over
  std::map<std::string, std::string> failures_;            // node -> why its wait ends (fail())
  bool stopping_ = false;
  std::mutex log_mutex_;
  std::chrono::steady_clock::time_point last_refusal_log_{};  // under log_mutex_
  // Last: destroyed first, it joins every connection's thread before the members above go.
  std::unique_ptr<AuthenticatedAcceptor> acceptor_;
};

}  // namespace hvdrun::launcher::remote
