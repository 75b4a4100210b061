// SSH options, target resolution and the timed connect sequence (ssh_session.h), and
// exec_command for one-off commands.
#include "launcher/ssh/ssh_session.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>

#include "launcher/ssh/libssh2_util.h"
#include "launcher/ssh/ssh_auth.h"
#include "launcher/ssh/ssh_channel.h"
#include "launcher/ssh/ssh_error.h"
#include "launcher/ssh/ssh_known_hosts.h"

namespace hvdrun::launcher::ssh {
namespace {

using std::chrono::duration_cast;
using std::chrono::microseconds;

long remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  return std::max<long>(1, left.count());
}

}  // namespace

struct SshSession::State {
  SocketCanceller* canceller = nullptr;
  UniqueFd socket;
  LIBSSH2_SESSION* session = nullptr;
  std::string where, local_addr, peer, host_key_note;
  std::vector<SshPhase> phases;

  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() {
    if (session != nullptr) {
      libssh2_session_set_blocking(session, 1);
      libssh2_session_set_timeout(session, 1000);
      libssh2_session_disconnect(session, "hvdrun: done");
      if (libssh2_session_free(session) != 0) {
        // A peer that stopped answering (its host cut off) keeps the free waiting, up to the
        // timeout, for its channels' close: with the socket shut down, libssh2 takes the
        // connection as gone and frees everything.
        ::shutdown(socket.get(), SHUT_RDWR);
        libssh2_session_free(session);
      }
    }
    if (canceller != nullptr) canceller->detach();  // before the socket closes
  }
};

SshSession::SshSession(std::unique_ptr<State> state) : state_(std::move(state)) {}
SshSession::SshSession(SshSession&&) noexcept = default;
SshSession::~SshSession() = default;

LIBSSH2_SESSION* SshSession::get() const noexcept {
  return state_->session;
}
int SshSession::fd() const noexcept {
  return state_->socket.get();
}
const std::string& SshSession::where() const noexcept {
  return state_->where;
}
const std::string& SshSession::local_addr() const noexcept {
  return state_->local_addr;
}
const std::string& SshSession::peer() const noexcept {
  return state_->peer;
}
const std::vector<SshPhase>& SshSession::phases() const noexcept {
  return state_->phases;
}
const std::string& SshSession::host_key_note() const noexcept {
  return state_->host_key_note;
}

namespace {

void check_cancel(const SocketCanceller* canceller, const std::string& where) {
  if (canceller != nullptr && canceller->cancelled()) {
    throw SshError(SshFailure::kCancelled, "connection to " + where + " cancelled");
  }
}

// A blocking libssh2 session on `socket`, after the SSH handshake.
LIBSSH2_SESSION* handshake(int socket, const std::string& where, Clock::time_point deadline,
                           const SocketCanceller* canceller, LIBSSH2_SESSION*& out) {
  out = libssh2_session_init();
  if (out == nullptr) {
    throw SshError(SshFailure::kHandshake, "cannot create an SSH session for " + where);
  }
  libssh2_session_set_blocking(out, 1);
  libssh2_session_set_timeout(out, remaining_ms(deadline));
  if (const int rc = session_handshake(out, socket); rc != 0) {
    check_cancel(canceller, where);
    throw_libssh2_error(out, rc, "SSH handshake with " + where, SshFailure::kHandshake);
  }
  return out;
}

KnownHostsFiles known_hosts_files(const SshOptions& options) {
  return {options.known_hosts_file.empty() ? options.home_dir + "/.ssh/known_hosts"
                                           : options.known_hosts_file,
          options.global_known_hosts_file, options.home_dir};
}

AuthSources auth_sources(const SshTarget& target, const SshOptions& options) {
  return {
      target.user, options.agent_socket, target.identity_files,
      options.use_default_keys ? default_key_files(options.home_dir) : std::vector<std::string>{},
      options.home_dir};
}

}  // namespace

SshSession SshSession::connect(const SshTarget& target, const SshOptions& options,
                               Clock::time_point deadline, SocketCanceller* canceller) {
  ensure_libssh2_initialized();
  auto state = std::make_unique<State>();
  auto mark = Clock::now();
  const auto phase_done = [&](const char* name) {
    const auto now = Clock::now();
    state->phases.push_back({name, duration_cast<microseconds>(now - mark)});
    mark = now;
  };
  const std::string who = target.alias == target.host_name
                              ? target.alias
                              : target.alias + " (HostName " + target.host_name + ")";
  TcpConnection tcp = connect_tcp(target.host_name, target.port, who, deadline, canceller);
  state->canceller = canceller;  // attached to the socket by connect_tcp
  state->socket = std::move(tcp.fd);
  state->peer = tcp.peer;
  state->local_addr = tcp.local_addr;
  state->where = target.alias + " (" + tcp.peer + ")";
  phase_done("connect");

  LIBSSH2_SESSION* session =
      handshake(state->socket.get(), state->where, deadline, canceller, state->session);
  phase_done("handshake");
  state->host_key_note = verify_host_key(session, target.host_name, target.port, state->where,
                                         options.host_key_policy, known_hosts_files(options));
  phase_done("host key");
  libssh2_session_set_timeout(session, remaining_ms(deadline));
  try {
    authenticate(session, auth_sources(target, options), state->where);
  } catch (const SshError&) {
    check_cancel(canceller, state->where);
    throw;
  }
  phase_done("auth");
  libssh2_keepalive_config(session, 1, static_cast<unsigned>(options.keepalive.count()));
  return SshSession(std::move(state));
}

ExecResult exec_command(SshSession& session, const std::string& command, const std::string& input,
                        Clock::time_point deadline) {
  LIBSSH2_SESSION* s = session.get();
  libssh2_session_set_blocking(s, 0);
  ExecResult result;
  {
    RemoteCommand remote(s, session.where(), command, input);
    remote.close_input();
    const auto sink = [&](StreamKind stream, std::string_view bytes) {
      (stream == StreamKind::kStdout ? result.out : result.err).append(bytes);
    };
    while (remote.state() != RemoteCommand::State::kDone) {
      if (remote.step(true, sink)) continue;
      const long left = remaining_ms(deadline);
      if (Clock::now() >= deadline) {
        libssh2_session_set_blocking(s, 1);
        throw SshError(SshFailure::kTimeout, "command '" + command + "' on " + session.where() +
                                                 " did not finish in time");
      }
      const int directions = libssh2_session_block_directions(s);
      pollfd p{session.fd(),
               static_cast<short>(POLLIN |
                                  ((directions & LIBSSH2_SESSION_BLOCK_OUTBOUND) ? POLLOUT : 0)),
               0};
      ::poll(&p, 1, static_cast<int>(std::min<long>(left, 1000)));
    }
    libssh2_session_set_blocking(s, 1);
    const ProcessEnd& exit = remote.result();
    if (exit.kind == ProcessEnd::Kind::kFailedToStart ||
        exit.kind == ProcessEnd::Kind::kLostConnection) {
      throw SshError(
          exit.kind == ProcessEnd::Kind::kLostConnection ? SshFailure::kLost : SshFailure::kChannel,
          exit.message);
    }
    if (exit.kind == ProcessEnd::Kind::kSignaled) {
      // The SSH name ("TERM"): known signals carry their number, unknown ones their name.
      result.exit_signal = exit.value != 0 ? signal_name(exit.value).substr(3) : exit.message;
    } else {
      result.exit_code = exit.value;
    }
  }
  return result;
}

}  // namespace hvdrun::launcher::ssh
