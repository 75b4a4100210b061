// read_user_file (user_file.h).
#include "launcher/spec/user_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/unique_fd.h"
#include "hvdrun/error.h"

namespace hvdrun::launcher {

std::string read_user_file(const std::string& path, const std::string& what, std::size_t limit) {
  const auto fail = [&](const std::string& reason) {
    throw UsageError("cannot read " + what + ": " + reason);
  };
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) fail(std::strerror(errno));
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t got = ::read(fd.get(), buffer, sizeof buffer);
    if (got == 0) return text;
    if (got < 0) {
      if (errno == EINTR) continue;
      fail(std::strerror(errno));  // EISDIR for a directory
    }
    if (text.size() + static_cast<std::size_t>(got) > limit) {
      fail("larger than " + std::to_string(limit >> 20) + " MiB");
    }
    text.append(buffer, static_cast<std::size_t>(got));
  }
}

}  // namespace hvdrun::launcher
