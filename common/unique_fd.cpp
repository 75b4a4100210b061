// The pipe and EINTR-safe fd helpers of unique_fd.h.
#include "common/unique_fd.h"

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "hvdrun/error.h"

namespace hvdrun {

Pipe make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw SystemError(std::string("pipe2 failed: ") + std::strerror(errno), "pipe2", errno);
  }
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

int write_all(int fd, std::string_view data) noexcept {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return 0;
}

long read_some(int fd, char* buffer, std::size_t size) noexcept {
  for (;;) {
    const ssize_t n = ::read(fd, buffer, size);
    if (n >= 0 || errno != EINTR) return static_cast<long>(n);
  }
}

}  // namespace hvdrun
