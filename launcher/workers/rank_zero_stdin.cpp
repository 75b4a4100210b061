// RankZeroStdin (rank_zero_stdin.h): what rank 0's stdin is.
#include "launcher/workers/rank_zero_stdin.h"

#include <sys/stat.h>

namespace hvdrun::launcher {

RankZeroStdin::RankZeroStdin(boost::asio::io_context& io, std::function<void()> on_line, int fd)
    : fd_(fd) {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return;
  file_ = S_ISREG(st.st_mode);
  passed_ = file_ || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
  if (S_ISCHR(st.st_mode)) relay_ = TerminalRelay::open(io, fd_, std::move(on_line));
}

bool RankZeroStdin::give(SpawnOptions& options) {
  if (passed_) {
    options.stdin_fd = fd_;
    return false;
  }
  if (!relay_) return false;
  options.stdin_fd = relay_->read_end();
  relay_->start();
  return true;
}

void RankZeroStdin::pause() {
  if (relay_) relay_->pause();
}

void RankZeroStdin::close() {
  if (relay_) relay_->close();
}

}  // namespace hvdrun::launcher
