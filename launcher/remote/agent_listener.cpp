// AgentListener (agent_listener.h): accept, prove the secret, read the Hello, hand over.
#include "launcher/remote/agent_listener.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "hvdrun/error.h"
#include "launcher/agent/agent_auth.h"
#include "launcher/agent/agent_protocol.h"
#include "launcher/remote/tcp_agent_transport.h"
#include "launcher/ssh/ssh_log.h"

namespace hvdrun::launcher::ssh {
namespace {

constexpr auto kHandshakeTime = std::chrono::seconds(10);

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
                             const std::vector<std::string>& nodes, std::uint16_t port)
    : secret_(std::move(secret)),
      nodes_(nodes.begin(), nodes.end()),
      listen_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)),
      stop_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (::inet_pton(AF_INET, bind.c_str(), &addr.sin_addr) != 1) {
    throw UsageError("the node agents' port: '" + bind + "' is not an IPv4 address");
  }
  const int one = 1;
  ::setsockopt(listen_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listen_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_.get(), 1024) != 0) {
    throw Error("cannot listen for node agents on " + bind + ":" + std::to_string(port) + ": " +
                std::strerror(errno));
  }
  socklen_t size = sizeof addr;
  ::getsockname(listen_.get(), reinterpret_cast<sockaddr*>(&addr), &size);
  port_ = ntohs(addr.sin_port);
  for (const auto& node : nodes_) waiting_.emplace(node, std::nullopt);
  accept_thread_ = std::thread([this] { accept_loop(); });
}

void AgentListener::close_port() {
  if (!accept_thread_.joinable()) return;
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(stop_.get(), &one, sizeof one);
  accept_thread_.join();  // no handshake starts after this
  listen_.reset();        // a connect now is refused: the agent tries again, elsewhere or later
}

AgentListener::~AgentListener() {
  close_port();
  std::unique_lock lock(mutex_);
  stopping_ = true;
  for (const auto& [fd, thread] : handshaking_) ::shutdown(fd, SHUT_RDWR);  // reads end now
  arrived_.notify_all();
  idle_.wait(lock, [this] { return handshaking_.empty(); });
  join_finished(lock);
}

void AgentListener::join_finished(std::unique_lock<std::mutex>& lock) {
  std::vector<std::thread> done;
  done.swap(finished_);
  lock.unlock();
  for (auto& thread : done) thread.join();  // each has left the lock: it ends now
  lock.lock();
}

void AgentListener::accept_loop() {
  for (;;) {
    pollfd fds[2] = {{listen_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents != 0) return;
    sockaddr_in peer{};
    socklen_t size = sizeof peer;
    UniqueFd fd(::accept4(listen_.get(), reinterpret_cast<sockaddr*>(&peer), &size, SOCK_CLOEXEC));
    if (!fd.valid()) continue;
    const std::string who = address_of(peer) + ":" + std::to_string(ntohs(peer.sin_port));
    std::unique_lock lock(mutex_);
    join_finished(lock);
    if (stopping_) return;
    if (handshaking_.size() >= kMaxHandshakes) {
      log_refusal("node agent connection from " + who +
                  " closed: " + std::to_string(kMaxHandshakes) + " handshakes already under way");
      continue;
    }
    // The entry first, then its thread (which waits for this lock before it ends): a failed
    // insert never leaves a joinable thread behind.
    const int raw = fd.get();
    auto& thread = handshaking_[raw];
    try {
      thread = std::thread(
          [this, fd = std::move(fd), who]() mutable { serve_connection(std::move(fd), who); });
    } catch (const std::system_error&) {
      handshaking_.erase(raw);  // no thread: the connection closes with `fd`
    }
  }
}

void AgentListener::log_refusal(const std::string& message) {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_refusal_log_ < std::chrono::seconds(1)) return;
  last_refusal_log_ = now;
  ssh_logger()->warn("{}", message);
}

void AgentListener::serve_connection(UniqueFd fd, std::string peer) {
  const int raw = fd.get();
  // Last, under the lock: this thread touches nothing of the listener after it.
  const auto done = [this, raw] {
    const auto self = handshaking_.find(raw);
    finished_.push_back(std::move(self->second));
    handshaking_.erase(self);
    if (handshaking_.empty()) idle_.notify_all();
  };
  std::string refusal;
  std::optional<Arrived> arrived;
  std::string node;
  try {
    const auto deadline = Clock::now() + kHandshakeTime;
    agent::launcher_handshake(raw, secret_, deadline);
    auto [read, hello] = read_hello(raw, deadline);
    node = hello.node.empty() ? hello.host : hello.node;
    sockaddr_in local{}, remote{};
    socklen_t size = sizeof local;
    ::getsockname(raw, reinterpret_cast<sockaddr*>(&local), &size);
    size = sizeof remote;
    ::getpeername(raw, reinterpret_cast<sockaddr*>(&remote), &size);
    arrived.emplace(Arrived{UniqueFd(), node + " (" + peer + ")", address_of(local),
                            address_of(remote), std::move(read)});
  } catch (const Error& e) {
    refusal = "node agent connection from " + peer + " closed: " + e.what();
  }
  std::lock_guard lock(mutex_);
  if (arrived && !refusal.empty()) arrived.reset();
  if (arrived) {
    const auto it = waiting_.find(node);
    if (it == waiting_.end()) {
      refusal =
          "node agent on " + arrived->where + " closed: '" + node + "' is not a host of this job";
    } else if (it->second || taken_.contains(node)) {
      refusal =
          "node agent on " + arrived->where + " closed: node '" + node + "' already has its agent";
    } else {
      arrived->fd = std::move(fd);
      it->second = std::move(arrived);
      arrived_.notify_all();
      return done();
    }
  }
  if (!stopping_) log_refusal(refusal);
  fd.reset();  // closed before the listener may go
  done();
}

AgentConnection AgentListener::wait_for(const std::string& node, Clock::time_point deadline,
                                        const SocketCanceller& canceller) {
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
    if (failure_) throw Error(*failure_);
    if (stopping_ || canceller.cancelled())
      throw Error("stopped before the agent of " + node + " connected");
    if (Clock::now() >= deadline) {
      throw TimeoutError("the node agent of " + node + " did not connect within the start timeout");
    }
    arrived_.wait_for(lock, std::chrono::milliseconds(100));
  }
}

void AgentListener::fail_all(const std::string& message) {
  {
    std::lock_guard lock(mutex_);
    if (!failure_) failure_ = message;
  }
  arrived_.notify_all();
}

}  // namespace hvdrun::launcher::ssh
