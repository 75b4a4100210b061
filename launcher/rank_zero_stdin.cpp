// RankZeroStdin (rank_zero_stdin.h): what rank 0's stdin is.
#include "launcher/rank_zero_stdin.h"

#include <sys/stat.h>

namespace hvdrun::launcher {

RankZeroStdin::RankZeroStdin(int fd) : fd_(fd) {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return;
  file_ = S_ISREG(st.st_mode);
  passed_ = file_ || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
}

void RankZeroStdin::give(SpawnOptions& options) const {
  if (passed_) options.stdin_fd = fd_;
}

}  // namespace hvdrun::launcher
