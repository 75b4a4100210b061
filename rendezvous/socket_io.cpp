// Client-side TCP I/O with poll() deadlines: connect with retry, read/write exact byte counts.
#include "socket_io.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <thread>

#include "hvdrun/error.h"

namespace hvdrun::rdzv::net {
namespace {

constexpr std::chrono::milliseconds kRetryInterval{20};

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

// Waits until `fd` is ready for `events`; false at the deadline.
bool wait_ready(int fd, short events, Clock::time_point deadline, int& err) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, remaining_ms(deadline));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) {
      err = errno;
      return true;  // the following syscall reports the error
    }
  }
}

bool transient(int err) {
  return err == ECONNREFUSED || err == ECONNRESET || err == ECONNABORTED || err == ETIMEDOUT ||
         err == EAGAIN || err == EINTR;
}

// One connect attempt; returns the socket or sets err.
Fd try_connect(const addrinfo& ai, Clock::time_point deadline, int& err) {
  Fd fd(::socket(ai.ai_family, ai.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai.ai_protocol));
  if (!fd) {
    err = errno;
    return {};
  }
  if (::connect(fd.get(), ai.ai_addr, ai.ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      err = errno;
      return {};
    }
    int poll_err = 0;
    if (!wait_ready(fd.get(), POLLOUT, deadline, poll_err)) {
      err = ETIMEDOUT;
      return {};
    }
    int so_error = 0;
    socklen_t len = sizeof so_error;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len) != 0) so_error = errno;
    if (so_error != 0) {
      err = so_error;
      return {};
    }
  }
  int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
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

std::string describe(const std::string& host, std::uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Fd connect_retrying(const std::string& host, std::uint16_t port, Clock::time_point deadline,
                    std::chrono::milliseconds timeout) {
  const std::string where = "rendezvous " + describe(host, port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    throw NetworkError(where + ": cannot resolve '" + host + "': " + ::gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
  int err = ETIMEDOUT;
  for (;;) {
    for (const addrinfo* ai = list.get(); ai != nullptr; ai = ai->ai_next) {
      if (Fd fd = try_connect(*ai, deadline, err)) return fd;
      if (!transient(err)) {
        throw NetworkError(where + ": connect failed: " + std::strerror(err));
      }
    }
    const auto now = Clock::now();
    if (now >= deadline) break;
    std::this_thread::sleep_for(std::min<Clock::duration>(kRetryInterval, deadline - now));
  }
  throw TimeoutError(where + " not reachable within " + std::to_string(timeout.count()) +
                     " ms: " + std::strerror(err));
}

IoResult write_all(int fd, std::span<const std::uint8_t> bytes, Clock::time_point deadline) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return {IoResult::kError, errno};
    int err = 0;
    if (!wait_ready(fd, POLLOUT, deadline, err)) return {IoResult::kTimeout, 0};
    if (err != 0) return {IoResult::kError, err};
  }
  return {};
}

IoResult read_exact(int fd, std::span<std::uint8_t> out, Clock::time_point deadline) {
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::recv(fd, out.data() + done, out.size() - done, 0);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) return {IoResult::kClosed, 0};
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return {IoResult::kError, errno};
    int err = 0;
    if (!wait_ready(fd, POLLIN, deadline, err)) return {IoResult::kTimeout, 0};
    if (err != 0) return {IoResult::kError, err};
  }
  return {};
}

}  // namespace hvdrun::rdzv::net
