// The soft open-file limit (open_files.h).
#include "launcher/open_files.h"

#include <sys/resource.h>

#include <cstdint>

namespace hvdrun::launcher {

std::size_t open_file_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return SIZE_MAX;
  }
  return static_cast<std::size_t>(limit.rlim_cur);
}

}  // namespace hvdrun::launcher
