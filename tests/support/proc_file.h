// Reading a file under /proc of a process that may vanish meanwhile: read(2) then fails with
// ESRCH, which std::ifstream turns into an exception. Here it is only the end of the text.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "common/unique_fd.h"

namespace hvdrun::test {

// What `path` holds; what could be read of it if reading fails; empty if it cannot be opened.
inline std::string read_proc_file(const std::string& path) {
  std::string text;
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n <= 0) return text;
    text.append(buffer, static_cast<std::size_t>(n));
  }
}

}  // namespace hvdrun::test
