// The soft open-file limit (open_files.h).
#include "launcher/plan/open_files.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdint>

namespace hvdrun::launcher {

std::size_t open_file_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return SIZE_MAX;
  }
  return static_cast<std::size_t>(limit.rlim_cur);
}

std::size_t credential_free_connections(std::size_t limit, WorkerCount workers) {
  constexpr std::size_t kFewest = 16;
  constexpr std::size_t kPorts = 2;
  if (limit == SIZE_MAX) return SIZE_MAX;
  const std::size_t job_files =
      kLauncherFiles + workers.local * (kFilesPerLocalWorker + 1) + workers.remote;
  const std::size_t room = limit > job_files ? limit - job_files : 0;
  return std::max(kFewest, room / (2 * kPorts));
}

}  // namespace hvdrun::launcher
