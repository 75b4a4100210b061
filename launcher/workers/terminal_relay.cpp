// TerminalRelay (terminal_relay.h): the terminal read without blocking, its lines written to
// rank 0's pipe.
#include "launcher/workers/terminal_relay.h"

#include <fcntl.h>
#include <unistd.h>

#include <boost/asio/write.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include "launcher/output/logging.h"

namespace hvdrun::launcher {
namespace asio = boost::asio;
namespace {

// How often a relay in the background looks whether it is in the foreground again.
constexpr std::chrono::milliseconds kForegroundPoll{100};

}  // namespace

std::unique_ptr<TerminalRelay> TerminalRelay::open(asio::io_context& io, int fd,
                                                   std::function<void()> on_line) {
  if (::isatty(fd) != 1) return nullptr;
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  UniqueFd terminal(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  int ends[2];
  if (!terminal || ::pipe2(ends, O_CLOEXEC) != 0) {
    launcher_log()->debug("rank 0 gets no terminal input: {}", std::strerror(errno));
    return nullptr;
  }
  UniqueFd read_end(ends[0]);
  UniqueFd write_end(ends[1]);
  return std::unique_ptr<TerminalRelay>(new TerminalRelay(
      io, std::move(terminal), std::move(read_end), std::move(write_end), std::move(on_line)));
}

TerminalRelay::TerminalRelay(asio::io_context& io, UniqueFd terminal, UniqueFd read_end,
                             UniqueFd write_end, std::function<void()> on_line)
    : terminal_(io, terminal.release()),
      pipe_(io, write_end.release()),
      read_end_(std::move(read_end)),
      foreground_poll_(io),
      on_line_(std::move(on_line)) {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGTTIN, &ignore, &previous_ttin_);
}

TerminalRelay::~TerminalRelay() {
  close();
}

void TerminalRelay::start() {
  if (closed_ || ended_) return;
  started_ = true;
  if (!busy_) read();
}

void TerminalRelay::pause() {
  started_ = false;
  boost::system::error_code ignored;
  terminal_.cancel(ignored);  // not the pipe's write: what was read still goes to rank 0
  foreground_poll_.cancel();
}

void TerminalRelay::close() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ignored;
  terminal_.close(ignored);
  pipe_.close(ignored);
  foreground_poll_.cancel();
  ::sigaction(SIGTTIN, &previous_ttin_, nullptr);
}

void TerminalRelay::read() {
  busy_ = true;
  terminal_.async_read_some(asio::buffer(buffer_), [this](const boost::system::error_code& ec,
                                                          std::size_t n) { on_read(ec, n); });
}

void TerminalRelay::next() {
  if (started_ && !ended_) {
    read();
  } else {
    busy_ = false;
  }
}

void TerminalRelay::end() {
  ended_ = true;
  busy_ = false;
  boost::system::error_code ignored;
  pipe_.close(ignored);
  terminal_.close(ignored);
}

void TerminalRelay::on_read(const boost::system::error_code& ec, std::size_t n) {
  if (closed_) return;
  if (ec == asio::error::operation_aborted) return next();  // paused (or paused and resumed)
  if (ec == asio::error::eof) {  // Ctrl-D: rank 0 reads the end of its input
    launcher_log()->debug("end of the terminal's input: rank 0's stdin is closed");
    return end();
  }
  if (ec.value() == EIO) return wait_for_foreground();  // hvdrun runs in the background
  if (ec) {
    launcher_log()->warn("cannot read the terminal for rank 0: {}; rank 0's stdin is closed",
                         ec.message());
    return end();
  }
  if (buffer_[n - 1] == '\n' && on_line_) on_line_();
  asio::async_write(pipe_, asio::buffer(buffer_.data(), n),
                    [this](const boost::system::error_code& error, std::size_t) {
                      if (closed_) return;
                      if (error) {
                        launcher_log()->warn("cannot pass terminal input to rank 0: {}",
                                             error.message());
                        return end();
                      }
                      next();
                    });
}

void TerminalRelay::wait_for_foreground() {
  foreground_poll_.expires_after(kForegroundPoll);
  foreground_poll_.async_wait([this](const boost::system::error_code& ec) {
    if (closed_) return;
    if (ec || !started_) return next();
    if (::tcgetpgrp(terminal_.native_handle()) == ::getpgrp()) return read();
    wait_for_foreground();
  });
}

}  // namespace hvdrun::launcher
