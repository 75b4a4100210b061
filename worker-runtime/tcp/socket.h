// TCP socket helpers of the ring backend: a listening socket, connect with retry until a
// deadline (over net::connect_until), socket tuning. Whole-buffer I/O is net::send_all and
// net::recv_all (socket_io.h). Functions here throw NetworkError/TimeoutError with the
// address they were given; callers add which rank and which collective.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/socket_io.h"
#include "common/unique_fd.h"

namespace hvdrun::tcp {

using Clock = net::Clock;

// A bound, listening TCP socket (SO_REUSEADDR, non-blocking). Default: empty.
class Listener {
 public:
  Listener() = default;
  // Binds `address` ("0.0.0.0", "127.0.0.1", ...) on `port` (0: ephemeral) and listens.
  static Listener bind(const std::string& address = "0.0.0.0", std::uint16_t port = 0);

  bool valid() const noexcept { return static_cast<bool>(fd_); }
  int fd() const noexcept { return fd_.get(); }
  std::uint16_t port() const noexcept { return port_; }
  // Accepts one pending connection (non-blocking, tuned, close-on-exec) or returns an empty
  // UniqueFd when none is waiting, or (`error` then set to its errno) when this process is
  // out of a resource: file descriptors, memory. `peer` receives "addr:port" of the remote end.
  UniqueFd accept_one(std::string& peer, int& error);
  void close() noexcept { fd_.reset(); }

 private:
  UniqueFd fd_;
  std::uint16_t port_ = 0;
};

// Connects to host:port, retrying refused/unreachable attempts until `deadline`.
// Returns a connected, non-blocking, tuned socket. Throws NetworkError (bad host),
// TimeoutError naming host:port, the last error and the time waited, or AbortedError when
// `interrupt_fd` (-1: none) became readable.
UniqueFd connect_with_retry(const std::string& host, std::uint16_t port, Clock::time_point deadline,
                            int interrupt_fd = -1);

// TCP_NODELAY; socket buffers are left to the kernel's autotuning.
void tune_socket(int fd) noexcept;
void set_nonblocking(int fd);

// "60 s", "0.2 s": a duration for messages.
std::string format_seconds(std::chrono::milliseconds duration);

}  // namespace hvdrun::tcp
