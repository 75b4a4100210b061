// The launcher's stdin, read by the worker of rank 0 when it runs on this machine, as mpirun
// gives it (`hvdrun ... < input`, `producer | hvdrun ...`): a file, a pipe or a socket is
// passed to rank 0 as it is. A terminal is relayed (TerminalRelay): rank 0 runs in a process
// group of its own, where reading the terminal itself would stop it (SIGTTIN), so it reads a
// pipe that hvdrun fills with what is typed while the job is in the foreground. The other
// ranks, and a rank 0 on another host, read /dev/null.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>

#include "launcher/process/process.h"
#include "launcher/workers/terminal_relay.h"

namespace hvdrun::launcher {

class RankZeroStdin {
 public:
  // `on_line`: see TerminalRelay::open.
  RankZeroStdin(boost::asio::io_context& io, std::function<void()> on_line, int fd = 0);

  // Sets the stdin of the worker that reads it, rank 0 on this machine (and starts relaying a
  // terminal). True when that is a terminal's: the worker is interactive.
  bool give(SpawnOptions& options);
  // Whether it was redirected from a file, whose input a rank 0 on another host would not get.
  bool is_file() const noexcept { return file_; }
  // The worker that read the terminal ended: it is not read until give() again.
  void pause();
  // Stops relaying a terminal (the job is over).
  void close();

 private:
  int fd_;
  bool passed_ = false;  // a file, pipe or socket
  bool file_ = false;
  std::unique_ptr<TerminalRelay> relay_;  // a terminal
};

}  // namespace hvdrun::launcher
