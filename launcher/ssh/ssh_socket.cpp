// TCP connect with a deadline for SSH sessions (ssh_socket.h): getaddrinfo, then per address a
// non-blocking connect waited on with poll, together with the canceller's wake-up fd.
#include "launcher/ssh/ssh_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>

#include "launcher/ssh/ssh_error.h"

namespace hvdrun::launcher::ssh {
namespace {

std::string format_address(const sockaddr* sa, bool with_port) {
  char text[INET6_ADDRSTRLEN] = {};
  int port = 0;
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    port = ntohs(in->sin_port);
  } else if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    port = ntohs(in6->sin6_port);
  } else {
    return "?";
  }
  if (!with_port) return text;
  const bool v6 = sa->sa_family == AF_INET6;
  return (v6 ? "[" + std::string(text) + "]" : std::string(text)) + ":" + std::to_string(port);
}

std::string seconds(Clock::duration d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", std::chrono::duration<double>(d).count());
  return text;
}

struct AddrInfoDeleter {
  void operator()(addrinfo* ai) const { ::freeaddrinfo(ai); }
};

std::unique_ptr<addrinfo, AddrInfoDeleter> resolve(const std::string& host, int port,
                                                   const std::string& who) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &result);
  if (rc != 0) {
    throw SshError(SshFailure::kResolve, "cannot resolve SSH host " + who + ": " +
                                             ::gai_strerror(rc) +
                                             " (check the name in -H / the host file, "
                                             "/etc/hosts or HostName in ~/.ssh/config)");
  }
  return std::unique_ptr<addrinfo, AddrInfoDeleter>(result);
}

// Waits for a non-blocking connect: 0, or the errno (ETIMEDOUT at the deadline, ECANCELED).
int wait_connected(int fd, Clock::time_point deadline, SocketCanceller* canceller) {
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return ETIMEDOUT;
    pollfd fds[2] = {{fd, POLLOUT, 0}, {canceller ? canceller->wake_fd() : -1, POLLIN, 0}};
    const int ready = ::poll(fds, 2, static_cast<int>(std::min<long>(left.count(), 60'000)));
    if (ready < 0 && errno != EINTR) return errno;
    if (canceller && canceller->cancelled()) return ECANCELED;
    if (ready > 0 && fds[0].revents != 0) break;
  }
  int error = 0;
  socklen_t len = sizeof error;
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
  return error;
}

// One address: 0 when connected (the canceller stays attached to `out`), else the errno.
int connect_one(const addrinfo* ai, UniqueFd& out, Clock::time_point deadline,
                SocketCanceller* canceller) {
  UniqueFd fd(
      ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
  if (!fd.valid()) return errno;
  if (canceller) canceller->attach(fd.get());
  int error = 0;
  if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
    error = errno == EINPROGRESS ? wait_connected(fd.get(), deadline, canceller) : errno;
  }
  if (error != 0) {
    if (canceller) canceller->detach();
    return error;
  }
  const int flags = ::fcntl(fd.get(), F_GETFL);
  ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  const int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  out = std::move(fd);
  return 0;
}

[[noreturn]] void throw_connect_error(int error, const std::string& who, const std::string& where,
                                      int port, Clock::duration elapsed) {
  const std::string target = "SSH host " + who + " (" + where + ")";
  switch (error) {
    case ECONNREFUSED:
      throw SshError(SshFailure::kRefused,
                     "connection refused by " + target + ": no sshd listens on port " +
                         std::to_string(port) +
                         " (is sshd running there? is the port right? see -p/--ssh-port or "
                         "Port in ~/.ssh/config)");
    case ETIMEDOUT:
      throw SshError(SshFailure::kTimeout,
                     "connecting to " + target + " timed out after " + seconds(elapsed) +
                         " (host down, or a firewall dropping port " + std::to_string(port) +
                         "? the limit is --start-timeout)");
    case ECANCELED:
      throw SshError(SshFailure::kCancelled, "connecting to " + target + " was cancelled");
    case ENETUNREACH:
    case EHOSTUNREACH:
    case EHOSTDOWN:
    case ENETDOWN:
      throw SshError(SshFailure::kUnreachable, target + " is unreachable: " + std::strerror(error) +
                                                   " (check the address and the network route)");
    default:
      throw SshError(SshFailure::kUnreachable,
                     "cannot connect to " + target + ": " + std::strerror(error));
  }
}

}  // namespace

SocketCanceller::SocketCanceller() : wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

void SocketCanceller::attach(int fd) {
  std::lock_guard lock(mutex_);
  fd_ = fd;
  if (cancelled_) ::shutdown(fd_, SHUT_RDWR);
}

void SocketCanceller::detach() {
  std::lock_guard lock(mutex_);
  fd_ = -1;
}

void SocketCanceller::cancel() {
  std::lock_guard lock(mutex_);
  cancelled_ = true;
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(wake_.get(), &one, sizeof one);
}

bool SocketCanceller::cancelled() const {
  std::lock_guard lock(mutex_);
  return cancelled_;
}

TcpConnection connect_tcp(const std::string& host, int port, const std::string& who,
                          Clock::time_point deadline, SocketCanceller* canceller) {
  const auto start = Clock::now();
  const auto addresses = resolve(host, port, who);
  int last_error = ECONNREFUSED;
  std::string where = host + ":" + std::to_string(port);
  for (const addrinfo* ai = addresses.get(); ai != nullptr; ai = ai->ai_next) {
    where = format_address(ai->ai_addr, true);
    UniqueFd fd;
    last_error = connect_one(ai, fd, deadline, canceller);
    if (last_error == 0) {
      TcpConnection connection;
      connection.peer = where;
      connection.local_addr = local_address(fd.get());
      connection.fd = std::move(fd);
      return connection;
    }
    if (last_error == ETIMEDOUT || last_error == ECANCELED) break;
  }
  throw_connect_error(last_error, who, where, port, Clock::now() - start);
}

std::string peer_address(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  return format_address(reinterpret_cast<sockaddr*>(&ss), true);
}

std::string local_address(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  return format_address(reinterpret_cast<sockaddr*>(&ss), false);
}

}  // namespace hvdrun::launcher::ssh
