// RankZeroStdin (rank_zero_stdin.h): what rank 0's stdin is, and the terminal's modes.
#include "launcher/rank_zero_stdin.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "launcher/signals_blocked.h"

namespace hvdrun::launcher {

RankZeroStdin::RankZeroStdin(int fd) : fd_(fd) {
  terminal_ = ::isatty(fd_) == 1;
  struct stat st {};
  if (!terminal_ && ::fstat(fd_, &st) == 0) {
    carries_input_ = S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
  }
  termios modes{};
  if (terminal_ && ::tcgetattr(fd_, &modes) == 0) modes_ = modes;
}

RankZeroStdin::~RankZeroStdin() {
  if (!modes_ || !in_foreground()) return;
  termios now{};
  if (::tcgetattr(fd_, &now) == 0 && std::memcmp(&now, &*modes_, sizeof now) == 0) return;
  const SignalsBlocked blocked;  // SIGTTOU, should hvdrun have been put in the background now
  ::tcsetattr(fd_, TCSANOW, &*modes_);
}

// A terminal that is not hvdrun's controlling terminal (hvdrun runs in a session of its own)
// has no foreground for hvdrun to be outside of.
bool RankZeroStdin::in_foreground() const noexcept {
  const pid_t foreground = ::tcgetpgrp(fd_);
  return foreground < 0 || foreground == ::getpgrp();
}

void RankZeroStdin::give(SpawnOptions& options) const {
  if (terminal_ && !in_foreground()) return;  // a background job does not take the input
  options.stdin_fd = fd_;
  options.new_session = terminal_;
}

}  // namespace hvdrun::launcher
