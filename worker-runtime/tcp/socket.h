// TCP socket helpers of the ring backend: a move-only fd owner, a listening socket, connect
// with retry until a deadline, and send/receive of whole buffers with poll() deadlines.
// Functions here report results as values (IoResult) or throw NetworkError/TimeoutError
// with the address they were given; callers add which rank and which collective.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace hvdrun::tcp {

using Clock = std::chrono::steady_clock;

// Owns one file descriptor; closes it on destruction. Move-only.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) noexcept : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }
  int release() noexcept;
  void reset() noexcept;

 private:
  int fd_ = -1;
};

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
  // Fd when none is waiting. `peer` receives "addr:port" of the remote end.
  Fd accept_one(std::string& peer);
  void close() noexcept { fd_.reset(); }

 private:
  Fd fd_;
  std::uint16_t port_ = 0;
};

// Connects to host:port, retrying refused/unreachable attempts until `deadline`.
// Returns a connected, non-blocking, tuned socket. Throws NetworkError (bad host) or
// TimeoutError naming host:port, the last error and the time waited.
Fd connect_with_retry(const std::string& host, std::uint16_t port, Clock::time_point deadline);

// TCP_NODELAY; socket buffers are left to the kernel's autotuning.
void tune_socket(int fd) noexcept;
void set_nonblocking(int fd);

struct IoResult {
  enum class Status { kOk, kClosed, kTimeout, kError };
  Status status = Status::kOk;
  int error = 0;  // errno for kError
  bool ok() const noexcept { return status == Status::kOk; }
  // "closed by peer", "timed out", or strerror(error).
  std::string text() const;
};

// Sends / receives exactly `size` bytes on a non-blocking socket, waiting with poll() until
// `deadline`.
IoResult send_all(int fd, const void* data, std::size_t size, Clock::time_point deadline);
IoResult recv_all(int fd, void* data, std::size_t size, Clock::time_point deadline);

// Milliseconds left until `deadline` as a poll() timeout (0 when passed).
int poll_timeout_ms(Clock::time_point deadline) noexcept;
std::string errno_text(int error);
// "60 s", "0.2 s": a duration for messages.
std::string format_seconds(std::chrono::milliseconds duration);

}  // namespace hvdrun::tcp
