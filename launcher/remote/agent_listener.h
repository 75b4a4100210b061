// AgentListener: the launcher's port for node agents that connect to it (started by srun, or
// by the nodes themselves). Each connection gets a thread of its own (at most kMaxHandshakes
// at once; more are closed): the handshake (agent_auth.h, 10 s at most), then the agent's
// preamble and Hello (64 KiB and 10 s at most), which name its node. The connection then goes
// to the host link waiting for that node (wait_for). A connection that fails the handshake,
// names a node that is not one of the job's, or one already connected, is closed with a log
// line (at most one a second). The hosts' links wait in parallel, each for its own node.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.h"
#include "launcher/remote/remote_spawn.h"

namespace hvdrun::launcher::ssh {

class AgentListener {
 public:
  static constexpr std::size_t kMaxHandshakes = 64;

  // Listens on `bind` (an IPv4 address; "0.0.0.0": every interface), `port` (0: any free
  // one). Throws hvdrun::Error naming the address if it cannot.
  AgentListener(const std::string& bind, std::string secret, const std::vector<std::string>& nodes,
                std::uint16_t port = 0);
  ~AgentListener();  // closes every connection not handed over, joins every thread
  AgentListener(const AgentListener&) = delete;
  AgentListener& operator=(const AgentListener&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  // The connection of `node`'s agent, once it came: blocks until then, `deadline` (a
  // TimeoutError), a cancel of `canceller`, or fail_all() (an Error with its message).
  AgentConnection wait_for(const std::string& node, Clock::time_point deadline,
                           const SocketCanceller& canceller);
  // Every wait for an agent not yet connected ends with `message` (its starter ended).
  void fail_all(const std::string& message);
  // Takes no more connections (the port is closed); those that came are still handed over.
  // Before the agents are told to come again to this port's next listener: none may reach
  // this one.
  void close_port();

 private:
  struct Arrived {
    UniqueFd fd;
    std::string where, local_addr, remote_addr, already_read;
  };
  void accept_loop();
  void serve_connection(UniqueFd fd, std::string peer);
  void log_refusal(const std::string& message);
  void join_finished(std::unique_lock<std::mutex>& lock);

  const std::string secret_;
  const std::set<std::string> nodes_;
  UniqueFd listen_;
  UniqueFd stop_;  // eventfd: the accept loop ends
  std::uint16_t port_ = 0;
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::map<std::string, std::optional<Arrived>> waiting_;  // node -> its connection, once here
  std::set<std::string> taken_;                            // nodes whose connection was handed over
  std::optional<std::string> failure_;
  // Connections in their handshake, by descriptor, with their threads; a thread that is done
  // moves itself to finished_, joined by the accept loop and the destructor. Every thread is
  // joined, so none outlives the listener with its per-thread state (OpenSSL's random pool).
  std::map<int, std::thread> handshaking_;
  std::vector<std::thread> finished_;
  std::condition_variable idle_;  // handshaking_ became empty
  bool stopping_ = false;
  std::chrono::steady_clock::time_point last_refusal_log_{};
  std::thread accept_thread_;  // last
};

}  // namespace hvdrun::launcher::ssh
