// TCP socket helpers of the ring backend (see socket.h): fd ownership, listen/accept,
// connect with retry, and whole-buffer send/receive with poll() deadlines.
#include "tcp/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>

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

// Waits for `events` on fd until deadline; returns revents, 0 on timeout, -1 (errno) on error.
int wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, poll_timeout_ms(deadline));
    if (n > 0) return p.revents;
    if (n == 0) {
      if (Clock::now() >= deadline) return 0;
      continue;
    }
    if (errno != EINTR) return -1;
  }
}

// One non-blocking connect attempt; returns the socket or an empty Fd with `error` set.
Fd try_connect(const addrinfo& ai, Clock::time_point deadline, int& error) {
  Fd fd(::socket(ai.ai_family, ai.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai.ai_protocol));
  if (!fd) {
    error = errno;
    return {};
  }
  tune_socket(fd.get());
  if (::connect(fd.get(), ai.ai_addr, ai.ai_addrlen) == 0) return fd;
  if (errno != EINPROGRESS) {
    error = errno;
    return {};
  }
  const int revents = wait_for(fd.get(), POLLOUT, deadline);
  if (revents <= 0) {
    error = revents == 0 ? ETIMEDOUT : errno;
    return {};
  }
  socklen_t len = sizeof(error);
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &len) != 0) error = errno;
  return error == 0 ? std::move(fd) : Fd{};
}

}  // namespace

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = other.release();
  }
  return *this;
}

int Fd::release() noexcept {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

void Fd::reset() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string errno_text(int error) {
  return std::strerror(error);
}

std::string format_seconds(std::chrono::milliseconds duration) {
  const auto ms = duration.count();
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + " s";
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g s", static_cast<double>(ms) / 1000.0);
  return text;
}

int poll_timeout_ms(Clock::time_point deadline) noexcept {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 1 << 30));
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
    throw NetworkError("fcntl(O_NONBLOCK) failed: " + errno_text(errno));
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
  listener.fd_ = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!listener.fd_) throw NetworkError("socket() for " + where + ": " + errno_text(errno));
  const int one = 1;
  ::setsockopt(listener.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(listener.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    throw NetworkError("bind " + where + ": " + errno_text(errno));
  }
  if (::listen(listener.fd(), 128) != 0) {
    throw NetworkError("listen " + where + ": " + errno_text(errno));
  }
  socklen_t len = sizeof(addr);
  ::getsockname(listener.fd(), reinterpret_cast<sockaddr*>(&addr), &len);
  listener.port_ = ntohs(addr.sin_port);
  return listener;
}

Fd Listener::accept_one(std::string& peer) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  Fd fd(
      ::accept4(fd_.get(), reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC));
  if (!fd) return {};
  tune_socket(fd.get());
  peer = address_text(addr);
  return fd;
}

Fd connect_with_retry(const std::string& host, std::uint16_t port, Clock::time_point deadline) {
  const std::string where = host + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &list); rc != 0) {
    throw NetworkError("cannot resolve " + where + ": " + ::gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owner(list, &::freeaddrinfo);
  const auto start = Clock::now();
  auto backoff = std::chrono::milliseconds(5);
  int error = 0;
  for (;;) {
    for (const addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
      if (Fd fd = try_connect(*ai, deadline, error)) return fd;
    }
    const auto now = Clock::now();
    if (now >= deadline) break;
    std::this_thread::sleep_for(std::min<Clock::duration>(backoff, deadline - now));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
  }
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  throw TimeoutError("cannot connect to " + where + " within " + format_seconds(waited) + ": " +
                     errno_text(error));
}

std::string IoResult::text() const {
  switch (status) {
    case Status::kOk:
      return "ok";
    case Status::kClosed:
      return "closed by peer";
    case Status::kTimeout:
      return "timed out";
    case Status::kError:
      return errno_text(error);
  }
  return "unknown";
}

IoResult send_all(int fd, const void* data, std::size_t size, Clock::time_point deadline) {
  const auto* p = static_cast<const std::byte*>(data);
  while (size > 0) {
    const ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      size -= static_cast<std::size_t>(n);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return {IoResult::Status::kError, errno};
    const int revents = wait_for(fd, POLLOUT, deadline);
    if (revents == 0) return {IoResult::Status::kTimeout, 0};
    if (revents < 0) return {IoResult::Status::kError, errno};
  }
  return {};
}

IoResult recv_all(int fd, void* data, std::size_t size, Clock::time_point deadline) {
  auto* p = static_cast<std::byte*>(data);
  while (size > 0) {
    const ssize_t n = ::recv(fd, p, size, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      size -= static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) return {IoResult::Status::kClosed, 0};
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return {IoResult::Status::kError, errno};
    const int revents = wait_for(fd, POLLIN, deadline);
    if (revents == 0) return {IoResult::Status::kTimeout, 0};
    if (revents < 0) return {IoResult::Status::kError, errno};
  }
  return {};
}

}  // namespace hvdrun::tcp
