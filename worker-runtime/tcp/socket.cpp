// TCP socket helpers of the ring backend (see socket.h): listen/accept, connect with retry
// (the ring's backoff and messages over net::connect_until), socket tuning.
#include "worker-runtime/tcp/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>

#include "hvdrun/error.h"

namespace hvdrun::tcp {
namespace {

std::string address_text(const sockaddr_storage& addr) {
  char host[INET6_ADDRSTRLEN] = {};
  std::uint16_t port = 0;
  if (addr.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(addr);
    inet_ntop(AF_INET, &in.sin_addr, host, sizeof(host));
    port = ntohs(in.sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  const auto& in6 = reinterpret_cast<const sockaddr_in6&>(addr);
  inet_ntop(AF_INET6, &in6.sin6_addr, host, sizeof(host));
  port = ntohs(in6.sin6_port);
  return "[" + std::string(host) + "]:" + std::to_string(port);
}

}  // namespace

std::string format_seconds(std::chrono::milliseconds duration) {
  const auto ms = duration.count();
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + " s";
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g s", static_cast<double>(ms) / 1000.0);
  return text;
}

void tune_socket(int fd) noexcept {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  // Socket buffers are left to the kernel's autotuning: on loopback it measured as fast as
  // or faster than fixed 256 KiB..4 MiB buffers, and on real links it follows the
  // bandwidth-delay product, which a fixed size (that turns autotuning off) cannot.
}

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    throw NetworkError("fcntl(O_NONBLOCK) failed: " + net::errno_text(errno));
  }
}

Listener Listener::bind(const std::string& address, std::uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (::inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1) {
    throw UsageError("cannot listen on '" + address + "': not an IPv4 address");
  }
  const std::string where = address + ":" + std::to_string(port);
  Listener listener;
  listener.fd_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!listener.fd_) throw NetworkError("socket() for " + where + ": " + net::errno_text(errno));
  const int one = 1;
  ::setsockopt(listener.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(listener.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    throw NetworkError("bind " + where + ": " + net::errno_text(errno));
  }
  // The kernel's largest backlog: a burst of stray connections before the ring setup starts
  // accepting must not fill the queue that the peer's connection joins.
  if (::listen(listener.fd(), SOMAXCONN) != 0) {
    throw NetworkError("listen " + where + ": " + net::errno_text(errno));
  }
  socklen_t len = sizeof(addr);
  ::getsockname(listener.fd(), reinterpret_cast<sockaddr*>(&addr), &len);
  listener.port_ = ntohs(addr.sin_port);
  return listener;
}

UniqueFd Listener::accept_one(std::string& peer, int& error) {
  error = 0;
  for (;;) {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    UniqueFd fd(::accept4(fd_.get(), reinterpret_cast<sockaddr*>(&addr), &len,
                          SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (fd) {
      tune_socket(fd.get());
      peer = address_text(addr);
      return fd;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;  // that one is gone; the next
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) error = errno;
    return {};
  }
}

UniqueFd connect_with_retry(const std::string& host, std::uint16_t port, Clock::time_point deadline,
                            int interrupt_fd) {
  const std::string where = host + ":" + std::to_string(port);
  const auto start = Clock::now();
  const net::RetryPolicy policy{std::chrono::milliseconds(5), std::chrono::milliseconds(200),
                                false};
  net::Connected c = net::connect_until(host, port, deadline, policy, interrupt_fd);
  if (c.fd) return std::move(c.fd);
  if (c.interrupted) throw AbortedError("connecting to " + where + " was interrupted");
  if (!c.resolve_error.empty()) {
    throw NetworkError("cannot resolve " + where + ": " + c.resolve_error);
  }
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  throw TimeoutError("cannot connect to " + where + " within " + format_seconds(waited) + ": " +
                     net::errno_text(c.error));
}

}  // namespace hvdrun::tcp
