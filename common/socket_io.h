// TCP client I/O over non-blocking sockets with poll() deadlines, shared by the rendezvous
// client and the runtime's ring: connect with retry until a deadline, send/receive whole
// buffers. Every wait also ends when an optional interrupt fd (an abort signal's eventfd)
// becomes readable. Results are values; callers turn them into errors naming who and where.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/unique_fd.h"

namespace hvdrun::net {

using Clock = std::chrono::steady_clock;

// How connect_until retries: pauses start at `first_pause` and double up to `max_pause`.
struct RetryPolicy {
  std::chrono::milliseconds first_pause{20};
  std::chrono::milliseconds max_pause{20};
  // true: an error other than refused/reset/aborted/timed out ends the retries at once.
  bool stop_on_hard_error = true;
};

struct Connected {
  UniqueFd fd;                // a connected, non-blocking TCP_NODELAY socket, or empty
  int error = 0;              // the last connect errno when `fd` is empty
  bool hard_error = false;    // retries stopped on a hard error, before the deadline
  bool interrupted = false;   // the interrupt fd became readable
  std::string resolve_error;  // gai_strerror when the name did not resolve (nothing tried)
};

// Connects to host:port (any address family), retrying until `deadline` per `policy`, or
// until `interrupt_fd` (-1: none) is readable.
Connected connect_until(const std::string& host, std::uint16_t port, Clock::time_point deadline,
                        const RetryPolicy& policy, int interrupt_fd = -1);

struct IoResult {
  enum class Status { kOk, kClosed, kTimeout, kError, kInterrupted };
  Status status = Status::kOk;
  int error = 0;  // errno for kError
  bool ok() const noexcept { return status == Status::kOk; }
  // "closed by peer", "timed out", "interrupted", or strerror(error).
  std::string text() const;
};

// Sends / receives exactly `size` bytes on a socket without blocking in the syscall, waiting
// with poll() until `deadline` or until `interrupt_fd` (-1: none) is readable.
IoResult send_all(int fd, const void* data, std::size_t size, Clock::time_point deadline,
                  int interrupt_fd = -1);
IoResult recv_all(int fd, void* data, std::size_t size, Clock::time_point deadline,
                  int interrupt_fd = -1);

// Milliseconds left until `deadline` as a poll() timeout (0 when passed).
int poll_timeout_ms(Clock::time_point deadline) noexcept;
std::string errno_text(int error);
// "ip:port" style name for messages: "127.0.0.1:4567" or "[::1]:4567".
std::string describe(const std::string& host, std::uint16_t port);

}  // namespace hvdrun::net
