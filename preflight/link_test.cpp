// The preflight link test (link_test.h).
#include "preflight/link_test.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/socket_io.h"

namespace hvdrun::preflight {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kChunk = 1 << 20;
constexpr std::chrono::seconds kNonceWait{2};

}  // namespace

LinkReceiver::LinkReceiver(const std::string& address) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (::inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1) addr.sin_addr.s_addr = INADDR_ANY;
  listener_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  socklen_t len = sizeof addr;
  if (!listener_ || ::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener_.get(), 16) != 0 ||
      ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    error_ = net::errno_text(errno);
    listener_.reset();
    return;
  }
  port_ = ntohs(addr.sin_port);
}

bool LinkReceiver::receive(const Nonce& nonce, std::chrono::milliseconds timeout,
                           std::string& why) {
  if (!listener_) {
    why = "cannot listen: " + error_;
    return false;
  }
  const auto deadline = Clock::now() + timeout;
  std::vector<std::uint8_t> buffer(kChunk);
  while (Clock::now() < deadline) {
    pollfd p{listener_.get(), POLLIN, 0};
    if (::poll(&p, 1, net::poll_timeout_ms(deadline)) <= 0) break;
    UniqueFd peer(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!peer) continue;
    Nonce got{};  // a connection that does not say it at once is not the one awaited
    const auto nonce_by = std::min(deadline, Clock::now() + kNonceWait);
    if (!net::recv_all(peer.get(), got.data(), got.size(), nonce_by).ok() || got != nonce) {
      continue;  // not the previous host's probe
    }
    std::uint64_t count = 0;  // until the sender's end of stream
    for (;;) {
      const long n = ::recv(peer.get(), buffer.data(), buffer.size(), 0);
      if (n > 0) {
        count += static_cast<std::uint64_t>(n);
        continue;
      }
      if (n == 0) break;
      if (errno == EINTR) continue;
      pollfd in{peer.get(), POLLIN, 0};
      if ((errno != EAGAIN && errno != EWOULDBLOCK) ||
          ::poll(&in, 1, net::poll_timeout_ms(deadline)) <= 0) {
        why = "the previous host's transfer broke or stalled";
        return false;
      }
    }
    net::send_all(peer.get(), &count, sizeof count, deadline);
    return true;
  }
  why = "no transfer from the previous host within " + std::to_string(timeout.count()) + " ms";
  return false;
}

std::optional<double> send_to_next(const std::string& host, std::uint16_t port, const Nonce& nonce,
                                   std::size_t max_bytes, std::chrono::milliseconds duration,
                                   std::chrono::milliseconds timeout, std::string& why) {
  const auto deadline = Clock::now() + timeout;
  auto connected = net::connect_until(host, port, deadline, net::RetryPolicy{});
  if (!connected.fd) {
    why = "cannot connect to " + net::describe(host, port) + ": " +
          (connected.resolve_error.empty() ? net::errno_text(connected.error)
                                           : connected.resolve_error);
    return std::nullopt;
  }
  const int fd = connected.fd.get();
  std::vector<std::uint8_t> buffer(kChunk, 0x5a);
  auto r = net::send_all(fd, nonce.data(), nonce.size(), deadline);
  const auto start = Clock::now();
  for (std::size_t sent = 0; r.ok() && sent < max_bytes && Clock::now() - start < duration;) {
    r = net::send_all(fd, buffer.data(), kChunk, deadline);
    sent += kChunk;
  }
  std::uint64_t count = 0;
  if (r.ok()) {
    ::shutdown(fd, SHUT_WR);
    r = net::recv_all(fd, &count, sizeof count, deadline);
  }
  if (!r.ok()) {
    why = "the transfer to " + net::describe(host, port) + " broke: " + r.text();
    return std::nullopt;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return static_cast<double>(count) / 1e6 / seconds;
}

std::string address_towards(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), "9", &hints, &found) != 0 || !found) return "127.0.0.1";
  UniqueFd probe(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_in local{};
  socklen_t len = sizeof local;
  std::string out = "127.0.0.1";
  if (probe && ::connect(probe.get(), found->ai_addr, found->ai_addrlen) == 0 &&
      ::getsockname(probe.get(), reinterpret_cast<sockaddr*>(&local), &len) == 0) {
    char text[INET_ADDRSTRLEN] = {};
    if (::inet_ntop(AF_INET, &local.sin_addr, text, sizeof text)) out = text;
  }
  ::freeaddrinfo(found);
  return out;
}

}  // namespace hvdrun::preflight
