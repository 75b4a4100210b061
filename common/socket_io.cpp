// TCP client I/O with poll() deadlines (socket_io.h): connect with retry, send/receive exact
// byte counts.
#include "common/socket_io.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

namespace hvdrun::net {
namespace {

constexpr int kInterrupted = -2;

// Waits for `events` on fd until deadline; returns revents, 0 on timeout, -1 (errno) on error,
// kInterrupted when `interrupt_fd` (-1: none) is readable.
int wait_for(int fd, short events, Clock::time_point deadline, int interrupt_fd) {
  for (;;) {
    pollfd p[2] = {{fd, events, 0}, {interrupt_fd, POLLIN, 0}};
    const int n = ::poll(p, interrupt_fd >= 0 ? 2 : 1, poll_timeout_ms(deadline));
    if (n > 0 && interrupt_fd >= 0 && p[1].revents != 0) return kInterrupted;
    if (n > 0) return p[0].revents;
    if (n == 0) {
      if (Clock::now() >= deadline) return 0;
      continue;
    }
    if (errno != EINTR) return -1;
  }
}

bool interrupted(int interrupt_fd) {
  if (interrupt_fd < 0) return false;
  pollfd p{interrupt_fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

bool transient(int err) {
  return err == ECONNREFUSED || err == ECONNRESET || err == ECONNABORTED || err == ETIMEDOUT ||
         err == EAGAIN || err == EINTR;
}

// One non-blocking connect attempt; returns the socket or an empty UniqueFd with `error` set.
UniqueFd try_connect(const addrinfo& ai, Clock::time_point deadline, int interrupt_fd, int& error) {
  UniqueFd fd(
      ::socket(ai.ai_family, ai.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai.ai_protocol));
  if (!fd) {
    error = errno;
    return {};
  }
  const int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (::connect(fd.get(), ai.ai_addr, ai.ai_addrlen) == 0) return fd;
  if (errno != EINPROGRESS) {
    error = errno;
    return {};
  }
  const int revents = wait_for(fd.get(), POLLOUT, deadline, interrupt_fd);
  if (revents == kInterrupted) {
    error = EINTR;
    return {};
  }
  if (revents <= 0) {
    error = revents == 0 ? ETIMEDOUT : errno;
    return {};
  }
  socklen_t len = sizeof(error);
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &len) != 0) error = errno;
  return error == 0 ? std::move(fd) : UniqueFd{};
}

}  // namespace

std::string errno_text(int error) {
  return std::strerror(error);
}

int poll_timeout_ms(Clock::time_point deadline) noexcept {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 1 << 30));
}

std::string describe(const std::string& host, std::uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Connected connect_until(const std::string& host, std::uint16_t port, Clock::time_point deadline,
                        const RetryPolicy& policy, int interrupt_fd) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  Connected out;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    out.resolve_error = ::gai_strerror(rc);
    return out;
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
  out.error = ETIMEDOUT;
  auto pause = policy.first_pause;
  for (;;) {
    for (const addrinfo* ai = list.get(); ai != nullptr; ai = ai->ai_next) {
      out.fd = try_connect(*ai, deadline, interrupt_fd, out.error);
      if (out.fd) return out;
      if (interrupted(interrupt_fd)) {
        out.interrupted = true;
        return out;
      }
      if (policy.stop_on_hard_error && !transient(out.error)) {
        out.hard_error = true;
        return out;
      }
    }
    const auto now = Clock::now();
    if (now >= deadline) return out;
    // The pause between attempts, cut short by the interrupt.
    const auto until = now + std::min<Clock::duration>(pause, deadline - now);
    pollfd p{interrupt_fd, POLLIN, 0};
    while (Clock::now() < until) {
      if (::poll(&p, interrupt_fd >= 0 ? 1 : 0, poll_timeout_ms(until)) > 0) {
        out.interrupted = true;
        return out;
      }
    }
    pause = std::min(pause * 2, policy.max_pause);
  }
}

std::string IoResult::text() const {
  switch (status) {
    case Status::kOk:
      return "ok";
    case Status::kClosed:
      return "closed by peer";
    case Status::kTimeout:
      return "timed out";
    case Status::kInterrupted:
      return "interrupted";
    case Status::kError:
      return errno_text(error);
  }
  return "unknown";
}

IoResult send_all(int fd, const void* data, std::size_t size, Clock::time_point deadline,
                  int interrupt_fd) {
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
    const int revents = wait_for(fd, POLLOUT, deadline, interrupt_fd);
    if (revents == kInterrupted) return {IoResult::Status::kInterrupted, 0};
    if (revents == 0) return {IoResult::Status::kTimeout, 0};
    if (revents < 0) return {IoResult::Status::kError, errno};
  }
  return {};
}

IoResult recv_all(int fd, void* data, std::size_t size, Clock::time_point deadline,
                  int interrupt_fd) {
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
    const int revents = wait_for(fd, POLLIN, deadline, interrupt_fd);
    if (revents == kInterrupted) return {IoResult::Status::kInterrupted, 0};
    if (revents == 0) return {IoResult::Status::kTimeout, 0};
    if (revents < 0) return {IoResult::Status::kError, errno};
  }
  return {};
}

}  // namespace hvdrun::net
