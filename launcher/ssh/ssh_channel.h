// RemoteCommand: one command on its own channel of an SSH session, driven without blocking
// through explicit states (opening, starting, running, closing, done) by the thread that owns
// the session. Several commands share one session; libssh2 opens one channel at a time, so
// the owner lets only one command be in kOpening (step()'s may_open).
#pragma once

#include <libssh2.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/process_end.h"
#include "launcher/agent/remote_exit.h"

namespace hvdrun::launcher::ssh {

class RemoteCommand {
 public:
  enum class State { kOpening, kStarting, kRunning, kClosing, kDone };
  using Sink = std::function<void(StreamKind, std::string_view)>;

  // `where` names the host in messages. `input` is written to the command's stdin first.
  RemoteCommand(LIBSSH2_SESSION* session, std::string where, std::string command,
                std::string input);
  ~RemoteCommand();  // frees the channel (the session should be in blocking mode then)
  RemoteCommand(const RemoteCommand&) = delete;
  RemoteCommand& operator=(const RemoteCommand&) = delete;

  // Advances as far as possible without blocking; output goes to `sink`. While
  // `read_output` is false, at most kPausedReadBytes more are read (the rest stays in the
  // channel, whose window then fills: back-pressure). Returns
  // true if anything happened (so the owner loops until a pass changes nothing, then polls).
  // A connection-level failure returns true with state kDone, result kLostConnection (or
  // kFailedToStart before kRunning), and session_failed() true.
  bool step(bool may_open, const Sink& sink, bool read_output = true);

  // Queues bytes for stdin (control messages); dropped once the remote side closed.
  void write(std::string_view bytes);
  // From now on, output is read whatever step()'s `read_output` says.
  void drain_output() { draining_ = true; }
  // Sends EOF on stdin after the queued bytes.
  void close_input();
  // Ends a command that has not started yet (start timeout, shutdown): kFailedToStart.
  void abandon(const std::string& message);

  State state() const noexcept { return state_; }
  // Whether the remote command was ever running (stays true once it has ended).
  bool started() const noexcept { return started_; }
  bool session_failed() const noexcept { return session_failed_; }
  const ProcessEnd& result() const noexcept { return result_; }  // valid in kDone
  // A failed end (a non-zero status or a signal) that the SSH server reported while the
  // command's output was still coming: OpenSSH reports a command's end when the command exits,
  // and the remote agent exits at its worker's end, leaving output the channel has not taken
  // yet to a child of its own. Seen while paused too. Once set, it stays.
  const std::optional<ProcessEnd>& early_end() const noexcept { return early_end_; }

 private:
  bool step_open(bool may_open);
  bool step_start();
  bool step_io(const Sink& sink, bool read_output);
  // After step_io's reads: EOF (kClosing), or an early end (see early_end()).
  bool step_end(bool read_output);
  bool step_close();
  bool fail(int rc, const std::string& what);
  // The end the channel's exit-signal or exit-status says (exit 0 if neither came yet).
  ProcessEnd channel_end() const;

  struct ChannelDeleter {
    void operator()(LIBSSH2_CHANNEL* channel) const { libssh2_channel_free(channel); }
  };
  LIBSSH2_SESSION* session_;
  std::unique_ptr<LIBSSH2_CHANNEL, ChannelDeleter> channel_;
  std::string where_, command_, pending_input_;
  static constexpr std::size_t kPausedReadBytes = 64 * 1024;
  std::size_t paused_budget_ = kPausedReadBytes;  // what a paused step may still read
  bool draining_ = false;
  bool input_eof_wanted_ = false;
  bool input_eof_sent_ = false;
  bool session_failed_ = false;
  bool started_ = false;
  State state_ = State::kOpening;
  ProcessEnd result_;
  std::optional<ProcessEnd> early_end_;
};

}  // namespace hvdrun::launcher::ssh
