// AgentListener (agent_listener.h): the agent's Hello after its proof, then hand over.
#include "launcher/remote/agent_listener.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/socket_io.h"
#include "hvdrun/error.h"
#include "launcher/agent/agent_auth.h"
#include "launcher/agent/agent_protocol.h"
#include "launcher/remote/agents_log.h"
#include "launcher/remote/tcp_agent_transport.h"

namespace hvdrun::launcher::remote {

using Clock = std::chrono::steady_clock;
namespace {

constexpr auto kHelloTime = std::chrono::seconds(10);

std::string address_of(const sockaddr_in& a) {
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
  return text;
}

// The agent's preamble and Hello, read within the deadline: all bytes read, and the Hello.
std::pair<std::string, agent::HelloFrame> read_hello(int fd, Clock::time_point deadline) {
  agent::AgentStreamReader reader;
  std::string read;
  char buffer[4096];
  for (;;) {
    if (auto frame = reader.next()) {
      if (auto* hello = std::get_if<agent::HelloFrame>(&*frame)) return {read, *hello};
      throw ProtocolError("the agent's first frame is not its Hello");
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
      throw TimeoutError("no Hello from the agent within 10 s");
    }
    const long n = read_some(fd, buffer, sizeof buffer);
    if (n <= 0) throw ProtocolError("the agent closed its connection before its Hello");
    read.append(buffer, static_cast<std::size_t>(n));
    reader.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
  }
}

}  // namespace

AgentListener::AgentListener(const std::string& bind, std::string secret,
                             const std::vector<std::string>& nodes, std::uint16_t port,
                             std::string starter, AuthenticatedAcceptor::Limits limits)
    : starter_(std::move(starter)) {
  UniqueFd listen(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (::inet_pton(AF_INET, bind.c_str(), &addr.sin_addr) != 1) {
    throw UsageError("the node agents' port: '" + bind + "' is not an IPv4 address");
  }
  const int one = 1;
  ::setsockopt(listen.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listen.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen.get(), 1024) != 0) {
    throw Error("cannot listen for node agents on " + bind + ":" + std::to_string(port) + ": " +
                std::strerror(errno));
  }
  socklen_t size = sizeof addr;
  ::getsockname(listen.get(), reinterpret_cast<sockaddr*>(&addr), &size);
  port_ = ntohs(addr.sin_port);
  for (const auto& node : nodes) waiting_.emplace(node, std::nullopt);
  acceptor_ = std::make_unique<AuthenticatedAcceptor>(
      std::move(listen), std::move(secret), limits,
      [this](UniqueFd fd, const AuthenticatedAcceptor::Peer& peer) { take(std::move(fd), peer); },
      [this](const std::string& line) { log_refusal("node agent " + line); });
}

void AgentListener::close_port() {
  acceptor_->close_port();
}

AgentListener::~AgentListener() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  arrived_.notify_all();
  acceptor_.reset();  // every connection's thread ends and is joined
}

void AgentListener::expect_again(const std::string& node) {
  std::lock_guard lock(mutex_);
  taken_.erase(node);
  failures_.erase(node);
}

// From any connection's thread: at most one line a second.
void AgentListener::log_refusal(const std::string& message) {
  std::lock_guard lock(log_mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (now - last_refusal_log_ < std::chrono::seconds(1)) return;
  last_refusal_log_ = now;
  agents_logger()->warn("{}", message);
}

void AgentListener::take(UniqueFd fd, const AuthenticatedAcceptor::Peer& peer) {
  const int raw = fd.get();
  std::string node;
  std::optional<Arrived> arrived;
  try {
    auto [read, hello] = read_hello(raw, Clock::now() + kHelloTime);
    node = hello.node.empty() ? hello.host : hello.node;
    sockaddr_in local{};
    socklen_t size = sizeof local;
    ::getsockname(raw, reinterpret_cast<sockaddr*>(&local), &size);
    arrived.emplace(Arrived{UniqueFd(), node + " (" + starter_ + " agent, " + peer.text + ")",
                            address_of(local), peer.address, std::move(read)});
  } catch (const Error& e) {
    return log_refusal("node agent connection from " + peer.text + " closed: " + e.what());
  }
  std::string refusal;
  {
    std::lock_guard lock(mutex_);
    const auto it = waiting_.find(node);
    if (it == waiting_.end()) {
      refusal = "'" + node + "' is not a host of this job";
    } else if (it->second || taken_.contains(node)) {
      refusal = "node '" + node + "' already has its agent";
    } else if (!stopping_) {
      arrived->fd = std::move(fd);
      it->second = std::move(arrived);
      arrived_.notify_all();
      return;
    } else {
      return;
    }
  }
  // The agent learns why, and exits non-zero saying so (a second --node-rank 1, a stray node).
  const std::string frame = agent::encode(agent::ToAgent{agent::RefusedFrame{refusal}});
  net::send_all(raw, frame.data(), frame.size(), Clock::now() + std::chrono::seconds(1));
  log_refusal("node agent on " + arrived->where + " refused: " + refusal);
}

AgentConnection AgentListener::wait_for(const std::string& node, Clock::time_point deadline,
                                        const ssh::SocketCanceller& canceller) {
  std::unique_lock lock(mutex_);
  for (;;) {
    const auto it = waiting_.find(node);
    if (it != waiting_.end() && it->second) {
      Arrived a = std::move(*it->second);
      it->second.reset();
      taken_.insert(node);
      lock.unlock();
      HostReady ready;
      ready.where = a.where;
      ready.local_addr = a.local_addr;
      ready.remote_addr = a.remote_addr;
      return {
          std::make_unique<TcpAgentTransport>(std::move(a.fd), a.where, std::move(a.already_read)),
          std::move(ready)};
    }
    if (const auto failed = failures_.find(node); failed != failures_.end()) {
      throw Error(failed->second);
    }
    if (stopping_ || canceller.cancelled())
      throw Error("stopped before the agent of " + node + " connected");
    if (Clock::now() >= deadline) {
      throw TimeoutError("the node agent of " + node + " did not connect within the start timeout");
    }
    arrived_.wait_for(lock, std::chrono::milliseconds(100));
  }
}

void AgentListener::fail(const std::vector<std::string>& nodes, const std::string& message) {
  {
    std::lock_guard lock(mutex_);
    for (const auto& node : nodes) {
      if (!taken_.contains(node)) failures_.emplace(node, message);
    }
  }
  arrived_.notify_all();
}

void AgentListener::fail_all(const std::string& message) {
  std::vector<std::string> nodes;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [node, arrived] : waiting_) nodes.push_back(node);
  }
  fail(nodes, message);
}

}  // namespace hvdrun::launcher::remote
