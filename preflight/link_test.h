// The preflight probe's link test: each host's first worker streams to the next host's first
// worker (hosts in a ring) for a short time and divides what the receiver counted by the time
// to its answer; the figure is what the host's link gives out. The connection starts with a nonce
// every worker received over the job's rendezvous-formed ring, so a stranger's connection is told
// apart and dropped.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "common/unique_fd.h"

namespace hvdrun::preflight {

using Nonce = std::array<std::uint8_t, 16>;

// A listener on `address` (an ephemeral port) for the previous host's transfer.
class LinkReceiver {
 public:
  explicit LinkReceiver(const std::string& address);
  std::uint16_t port() const noexcept { return port_; }
  // Accepts connections until one starts with `nonce`, counts what it sends until its end of
  // stream and answers the count; false (and `why`) if none did by the deadline.
  bool receive(const Nonce& nonce, std::chrono::milliseconds timeout, std::string& why);

 private:
  UniqueFd listener_;
  std::uint16_t port_ = 0;
  std::string error_;  // why there is no listener
};

// Sends to host:port after `nonce` for `duration` or `max_bytes`, whichever comes first; MB/s
// that the receiver counted, to its answer; none (and `why`) if it failed.
std::optional<double> send_to_next(const std::string& host, std::uint16_t port, const Nonce& nonce,
                                   std::size_t max_bytes, std::chrono::milliseconds duration,
                                   std::chrono::milliseconds timeout, std::string& why);

// The local address of the route to `host` (no packet is sent).
std::string address_towards(const std::string& host);

}  // namespace hvdrun::preflight
