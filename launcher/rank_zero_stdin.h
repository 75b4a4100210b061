// The launcher's stdin, read by the worker of rank 0 when it runs on this machine, as mpirun
// gives it (`hvdrun ... < input`, `producer | hvdrun ...`): a file, a pipe or a socket is
// passed to rank 0 as it is. A terminal is not: rank 0 runs in a process group of its own,
// where reading the terminal would stop it (SIGTTIN); it reads /dev/null, as the other ranks
// and a rank 0 on another host do.
#pragma once

#include "launcher/process.h"

namespace hvdrun::launcher {

class RankZeroStdin {
 public:
  explicit RankZeroStdin(int fd = 0);

  // Sets the stdin of the worker that reads it, rank 0 on this machine.
  void give(SpawnOptions& options) const;
  // Whether it was redirected from a file, whose input a rank 0 on another host would not get.
  bool is_file() const noexcept { return file_; }

 private:
  int fd_;
  bool passed_ = false;  // a file, pipe or socket
  bool file_ = false;
};

}  // namespace hvdrun::launcher
