// RemoteCommand's state machine over a non-blocking libssh2 channel (ssh_channel.h), and the
// description of remote exits (remote_exit.h).
#include "launcher/ssh/ssh_channel.h"

#include <signal.h>
#include <string.h>

#include <algorithm>
#include <utility>

#include "launcher/ssh/libssh2_util.h"

namespace hvdrun::launcher::ssh {
namespace {

bool is_session_error(int rc) {
  return rc == LIBSSH2_ERROR_SOCKET_SEND || rc == LIBSSH2_ERROR_SOCKET_RECV ||
         rc == LIBSSH2_ERROR_SOCKET_DISCONNECT || rc == LIBSSH2_ERROR_SOCKET_NONE ||
         rc == LIBSSH2_ERROR_SOCKET_TIMEOUT || rc == LIBSSH2_ERROR_TIMEOUT ||
         rc == LIBSSH2_ERROR_KEX_FAILURE || rc == LIBSSH2_ERROR_DECRYPT ||
         rc == LIBSSH2_ERROR_BAD_USE;
}

constexpr struct {
  const char* name;
  int signo;
} kSignals[] = {{"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"ILL", SIGILL},
                {"TRAP", SIGTRAP}, {"ABRT", SIGABRT}, {"BUS", SIGBUS},   {"FPE", SIGFPE},
                {"KILL", SIGKILL}, {"USR1", SIGUSR1}, {"SEGV", SIGSEGV}, {"USR2", SIGUSR2},
                {"PIPE", SIGPIPE}, {"ALRM", SIGALRM}, {"TERM", SIGTERM}, {"XCPU", SIGXCPU},
                {"XFSZ", SIGXFSZ}, {"SYS", SIGSYS}};

}  // namespace

int signal_from_ssh_name(const std::string& name) {
  for (const auto& entry : kSignals) {
    if (name == entry.name) return entry.signo;
  }
  return 0;
}

RemoteCommand::RemoteCommand(LIBSSH2_SESSION* session, std::string where, std::string command,
                             std::string input)
    : session_(session),
      where_(std::move(where)),
      command_(std::move(command)),
      pending_input_(std::move(input)) {}

RemoteCommand::~RemoteCommand() = default;

bool RemoteCommand::fail(int rc, const std::string& what) {
  const bool was_running = started();
  session_failed_ = is_session_error(rc);
  result_.kind = was_running ? ProcessEnd::Kind::kLostConnection : ProcessEnd::Kind::kFailedToStart;
  result_.message = (result_.kind == ProcessEnd::Kind::kLostConnection
                         ? "lost connection to host " + where_ + ": "
                         : "cannot start the remote command on " + where_ + ": ") +
                    what + ": " + last_error(session_);
  state_ = State::kDone;
  return true;
}

void RemoteCommand::abandon(const std::string& message) {
  if (state_ == State::kDone) return;
  result_ = ProcessEnd::failed_to_start(message);
  state_ = State::kDone;
}

void RemoteCommand::write(std::string_view bytes) {
  if (!input_eof_wanted_) pending_input_.append(bytes);
}

void RemoteCommand::close_input() {
  input_eof_wanted_ = true;
}

bool RemoteCommand::step(bool may_open, const Sink& sink, bool read_output) {
  switch (state_) {
    case State::kOpening:
      return step_open(may_open);
    case State::kStarting:
      return step_start();
    case State::kRunning:
      return step_io(sink, read_output);
    case State::kClosing:
      return step_close();
    case State::kDone:
      return false;
  }
  return false;
}

bool RemoteCommand::step_open(bool may_open) {
  if (!may_open) return false;
  channel_.reset(libssh2_channel_open_session(session_));
  if (!channel_) {
    const int rc = libssh2_session_last_errno(session_);
    if (rc == LIBSSH2_ERROR_EAGAIN) return false;
    fail(rc, "opening a channel");
    if (rc == LIBSSH2_ERROR_CHANNEL_FAILURE) {
      // OpenSSH's sshd refuses a connection's channel past its MaxSessions (10 by default);
      // hvdrun opens one per worker of the host.
      result_.message +=
          " (the SSH server refused another session on this connection: OpenSSH's sshd allows "
          "MaxSessions, 10 by default, and hvdrun opens one per worker of a host; start at most "
          "that many workers on this host, or raise MaxSessions in its sshd_config)";
    }
    return true;
  }
  state_ = State::kStarting;
  return true;
}

bool RemoteCommand::step_start() {
  const int rc = libssh2_channel_process_startup(channel_.get(), "exec", 4, command_.data(),
                                                 static_cast<unsigned>(command_.size()));
  if (rc == LIBSSH2_ERROR_EAGAIN) return false;
  if (rc != 0) return fail(rc, "executing '" + command_ + "'");
  state_ = State::kRunning;
  started_ = true;
  return true;
}

bool RemoteCommand::step_io(const Sink& sink, bool read_output) {
  bool progress = false;
  while (!pending_input_.empty()) {
    const auto n =
        libssh2_channel_write(channel_.get(), pending_input_.data(), pending_input_.size());
    if (n == LIBSSH2_ERROR_EAGAIN) break;
    if (n < 0) {
      if (is_session_error(static_cast<int>(n))) return fail(static_cast<int>(n), "writing");
      pending_input_.clear();  // the remote side closed its stdin: nothing to deliver to
      break;
    }
    pending_input_.erase(0, static_cast<std::size_t>(n));
    progress = true;
  }
  if (input_eof_wanted_ && !input_eof_sent_ && pending_input_.empty()) {
    const int rc = libssh2_channel_send_eof(channel_.get());
    if (rc != LIBSSH2_ERROR_EAGAIN) {
      if (is_session_error(rc)) return fail(rc, "closing stdin");
      input_eof_sent_ = true;
      progress = true;
    }
  }
  // Paused: each channel may still take kPausedReadBytes. A quiet worker's last lines and
  // its exit then still arrive (a read also takes in the session's incoming packets), while
  // a chatty one stops once its window runs out.
  read_output = read_output || draining_;
  if (read_output) paused_budget_ = kPausedReadBytes;
  char buffer[32768];
  for (const int stream : {0, SSH_EXTENDED_DATA_STDERR}) {
    for (;;) {
      const std::size_t want =
          std::min(sizeof buffer, read_output ? sizeof buffer : paused_budget_);
      if (want == 0) break;
      const auto n = libssh2_channel_read_ex(channel_.get(), stream, buffer, want);
      if (n == LIBSSH2_ERROR_EAGAIN || n == 0) break;
      if (n < 0) return fail(static_cast<int>(n), "reading output");
      if (!read_output) paused_budget_ -= static_cast<std::size_t>(n);
      sink(stream == 0 ? StreamKind::kStdout : StreamKind::kStderr,
           std::string_view(buffer, static_cast<std::size_t>(n)));
      progress = true;
    }
  }
  return step_end(read_output) || progress;
}

bool RemoteCommand::step_end(bool read_output) {
  if (!read_output && paused_budget_ == 0) {
    // Takes in the session's packets without taking this channel's data or widening its
    // window: an end reported while the output waits, or a broken connection, is seen this
    // way. libssh2_channel_wait_eof reads the transport until EAGAIN, unless this channel's
    // EOF came already; then a read of no bytes does (it may widen the window, but nothing
    // comes on a channel after its EOF).
    int rc = libssh2_channel_wait_eof(channel_.get());
    if (rc == 0) {
      char none = 0;
      rc = static_cast<int>(libssh2_channel_read_ex(channel_.get(), 0, &none, 0));
    }
    if (rc < 0 && rc != LIBSSH2_ERROR_EAGAIN) return fail(rc, "reading output");
  }
  if (libssh2_channel_eof(channel_.get()) == 1) {
    state_ = State::kClosing;
    return true;
  }
  if (early_end_) return false;
  ProcessEnd end = channel_end();
  if (end.success()) return false;  // no end yet, or exit 0 (seen after the output)
  early_end_ = std::move(end);
  return true;
}

ProcessEnd RemoteCommand::channel_end() const {
  char* signal_name = nullptr;
  std::size_t signal_length = 0;
  libssh2_channel_get_exit_signal(channel_.get(), &signal_name, &signal_length, nullptr, nullptr,
                                  nullptr, nullptr);
  if (signal_name == nullptr)
    return ProcessEnd::exited(libssh2_channel_get_exit_status(channel_.get()));
  const std::string name(signal_name, signal_length);
  libssh2_free(session_, signal_name);
  const int signo = signal_from_ssh_name(name);
  return signo != 0 ? ProcessEnd::signaled(signo)
                    : ProcessEnd{ProcessEnd::Kind::kSignaled, 0, name};
}

bool RemoteCommand::step_close() {
  int rc = libssh2_channel_close(channel_.get());
  if (rc == LIBSSH2_ERROR_EAGAIN) return false;
  if (rc == 0) rc = libssh2_channel_wait_closed(channel_.get());
  if (rc == LIBSSH2_ERROR_EAGAIN) return false;
  if (rc != 0 && is_session_error(rc)) return fail(rc, "waiting for the exit status");
  result_ = channel_end();
  state_ = State::kDone;
  return true;
}

}  // namespace hvdrun::launcher::ssh
