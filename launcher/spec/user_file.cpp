// read_user_file (user_file.h).
#include "launcher/spec/user_file.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "common/duration_text.h"
#include "common/unique_fd.h"
#include "hvdrun/error.h"

namespace hvdrun::launcher {

std::string read_user_file(const std::string& path, const std::string& what, std::size_t limit,
                           std::chrono::milliseconds wait) {
  const auto fail = [&](const std::string& reason) {
    throw UsageError("cannot read " + what + ": " + reason);
  };
  // Non-blocking: opening a FIFO that no one writes to would wait for a writer forever.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) fail(std::strerror(errno));
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) fail(std::strerror(errno));
  const bool regular = S_ISREG(info.st_mode);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  std::string text;
  char buffer[65536];
  for (;;) {
    if (!regular) {  // a pipe, FIFO or device: what it gives within `wait`
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{fd.get(), POLLIN, 0};
      const int ready = left.count() > 0 ? ::poll(&p, 1, static_cast<int>(left.count())) : 0;
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) {
        fail("it is not a regular file and gave " +
             (text.empty() ? std::string("nothing") : "no end") + " within " +
             describe_duration(wait) + " (a FIFO with no writer?)");
      }
    }
    const ssize_t got = ::read(fd.get(), buffer, sizeof buffer);
    if (got == 0) return text;
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      fail(std::strerror(errno));  // EISDIR for a directory
    }
    if (text.size() + static_cast<std::size_t>(got) > limit) {
      fail("larger than " + std::to_string(limit >> 20) + " MiB");
    }
    text.append(buffer, static_cast<std::size_t>(got));
  }
}

}  // namespace hvdrun::launcher
