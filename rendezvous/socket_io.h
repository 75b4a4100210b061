// Blocking-style TCP I/O for the rendezvous client over non-blocking sockets with poll()
// deadlines: an RAII fd, connect with retry of refused connections, read/write all bytes.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>

namespace hvdrun::rdzv::net {

using Clock = std::chrono::steady_clock;

// Move-only owner of a file descriptor.
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

struct IoResult {
  enum Status { kOk, kTimeout, kClosed, kError };
  Status status = kOk;
  int err = 0;  // errno for kError
};

// Connects a non-blocking TCP_NODELAY socket, retrying refused connections every ~20 ms
// until `deadline`. Throws TimeoutError ("rendezvous H:P not reachable within N ms: why")
// or NetworkError.
Fd connect_retrying(const std::string& host, std::uint16_t port, Clock::time_point deadline,
                    std::chrono::milliseconds timeout);
IoResult write_all(int fd, std::span<const std::uint8_t> bytes, Clock::time_point deadline);
IoResult read_exact(int fd, std::span<std::uint8_t> out, Clock::time_point deadline);
// "ip:port" style name for messages: "127.0.0.1:4567" or "[::1]:4567".
std::string describe(const std::string& host, std::uint16_t port);

}  // namespace hvdrun::rdzv::net
