// UniqueFd: the one move-only owner of a file descriptor (closed on destruction), a
// close-on-exec pipe made of two of them, and EINTR-safe read/write on blocking fds.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <string_view>
#include <utility>

namespace hvdrun {

// Owns one file descriptor; closes it on destruction. Move-only; not thread-safe.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  explicit operator bool() const noexcept { return valid(); }
  int release() noexcept { return std::exchange(fd_, -1); }
  // Closes the owned fd (if any) and takes `fd`.
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// Both ends close-on-exec.
struct Pipe {
  UniqueFd read;
  UniqueFd write;
};
// Throws hvdrun::Error ("pipe2 failed: why").
Pipe make_pipe();

// Writes all of `data` (blocking fd), retrying on EINTR. Returns 0 or the errno.
int write_all(int fd, std::string_view data) noexcept;

// read() retried on EINTR: bytes read, 0 at EOF, -1 with errno set.
long read_some(int fd, char* buffer, std::size_t size) noexcept;

}  // namespace hvdrun
