// TerminalRelay: what is typed on hvdrun's terminal, passed on to rank 0 through a pipe (rank
// 0 runs in a process group of its own, where reading the terminal itself would stop it with
// SIGTTIN), so that pdb or input() in rank 0 reads it. The terminal keeps its modes: it echoes
// and edits each line, and the relay passes on whole lines as the terminal hands them over.
//
// The relay reads only while hvdrun's process group is the terminal's foreground: SIGTTIN is
// ignored while it exists, so a read in the background fails (EIO) instead of stopping
// hvdrun, and the relay then looks every 100 ms whether the job is in the foreground again
// (`fg` of a running job sends no signal). It reads only while rank 0 runs (pause() when it
// ends): what is typed after it is the shell's. End of input (Ctrl-D) closes the pipe: rank 0
// reads its end. While rank 0 does not read and the pipe is full, the terminal is not read
// either: nothing typed is dropped.
// Lifetime: io thread only; close() (or destruction) stops it, closes its descriptors and
// restores SIGTTIN's disposition.
#pragma once

#include <signal.h>

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstddef>
#include <functional>
#include <memory>

#include "common/unique_fd.h"

namespace hvdrun::launcher {

class TerminalRelay {
 public:
  // A relay for the terminal on `fd`, which it opens anew (its own file description: it
  // reads that one without blocking, and the shell's stays as it is); null when `fd` is not a
  // terminal or it cannot be opened. `on_line` is called for each line read (the terminal
  // echoed it: the cursor is at the start of a line).
  static std::unique_ptr<TerminalRelay> open(boost::asio::io_context& io, int fd,
                                             std::function<void()> on_line);
  ~TerminalRelay();
  TerminalRelay(const TerminalRelay&) = delete;
  TerminalRelay& operator=(const TerminalRelay&) = delete;

  // The pipe's read end, rank 0's stdin.
  int read_end() const noexcept { return read_end_.get(); }
  // Starts (or resumes) reading the terminal.
  void start();
  // Stops reading the terminal until the next start(); what was read is still passed on.
  void pause();
  void close();

 private:
  TerminalRelay(boost::asio::io_context& io, UniqueFd terminal, UniqueFd read_end,
                UniqueFd write_end, std::function<void()> on_line);
  void read();
  void on_read(const boost::system::error_code& ec, std::size_t n);
  // After a read or a write: the next read, unless paused.
  void next();
  void wait_for_foreground();
  // The terminal's input ended or failed: rank 0 reads the end of its input.
  void end();

  boost::asio::posix::stream_descriptor terminal_;
  boost::asio::posix::stream_descriptor pipe_;  // the write end
  UniqueFd read_end_;
  boost::asio::steady_timer foreground_poll_;
  std::function<void()> on_line_;
  std::array<char, 4096> buffer_{};
  struct sigaction previous_ttin_ {};
  bool started_ = false;  // wanted: between start() and pause()
  bool busy_ = false;     // a read, a write or a wait for the foreground is under way
  bool ended_ = false;
  bool closed_ = false;
};

}  // namespace hvdrun::launcher
