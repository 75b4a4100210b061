// The launcher's stdin, read by the worker of rank 0 when it runs on this machine, as mpirun
// and horovodrun give it (`hvdrun ... < input`, `breakpoint()` in rank 0):
// - a file or a pipe is passed to rank 0 as it is;
// - a terminal too, with rank 0 in a session of its own (SpawnOptions::new_session), so that
//   pdb can read it and set its modes while hvdrun keeps the terminal's foreground (Ctrl-C
//   still reaches hvdrun, which forwards it). While hvdrun is a background job of that
//   terminal, rank 0 reads /dev/null instead of taking the terminal's input.
// The other ranks, and a rank 0 on another host, read /dev/null.
// A terminal's modes are saved at construction and put back at destruction, which comes
// after the workers' (a rank killed in pdb's raw mode would leave the terminal without echo).
#pragma once

#include <termios.h>

#include <optional>

#include "launcher/process.h"

namespace hvdrun::launcher {

class RankZeroStdin {
 public:
  explicit RankZeroStdin(int fd = 0);
  ~RankZeroStdin();
  RankZeroStdin(const RankZeroStdin&) = delete;
  RankZeroStdin& operator=(const RankZeroStdin&) = delete;

  // Sets the stdin (and the session) of the worker that reads it, rank 0 on this machine.
  void give(SpawnOptions& options) const;
  // Whether it may carry input that a remote rank 0 would not get: a file, pipe or socket.
  bool carries_input() const noexcept { return carries_input_; }

 private:
  bool in_foreground() const noexcept;

  int fd_;
  bool terminal_ = false;
  bool carries_input_ = false;
  std::optional<termios> modes_;
};

}  // namespace hvdrun::launcher
