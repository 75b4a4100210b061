// UniqueFd: move-only owner of one file descriptor (closed on destruction), and the EINTR-safe
// read/write helpers the SSH code and the remote agent share.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <string_view>
#include <utility>

namespace hvdrun::launcher::ssh {

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
  int release() noexcept { return std::exchange(fd_, -1); }
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// Writes all of `data` (blocking fd), retrying on EINTR. Returns 0 or the errno.
int write_all(int fd, std::string_view data) noexcept;

// read() retried on EINTR: bytes read, 0 at EOF, -1 with errno set.
long read_some(int fd, char* buffer, std::size_t size) noexcept;

// A pipe with both ends close-on-exec; throws hvdrun::Error naming pipe2 on failure.
struct PipePair {
  UniqueFd read;
  UniqueFd write;
};
PipePair make_cloexec_pipe();

}  // namespace hvdrun::launcher::ssh
