// The rendezvous client's connection (client_impl.h): connect and HMAC handshake, frames, the
// reader thread that sends heartbeats and takes the server's pushes, and each request's
// exchange with its deadline.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "hvdrun/error.h"
#include "rendezvous/auth.h"
#include "rendezvous/client_impl.h"

namespace hvdrun::rdzv {
namespace {

using Clock = net::Clock;
using std::chrono::milliseconds;

// Connects to the rendezvous server, retrying refused connections every 20 ms until
// `deadline`. Throws TimeoutError ("rendezvous H:P not reachable within N ms: why") or
// NetworkError.
UniqueFd connect_to(const Endpoint& server, const std::string& where, Clock::time_point deadline,
                    milliseconds timeout) {
  net::Connected c = net::connect_until(server.host, server.port, deadline, net::RetryPolicy{});
  if (c.fd) return std::move(c.fd);
  if (!c.resolve_error.empty()) {
    throw NetworkError(where + ": cannot resolve '" + server.host + "': " + c.resolve_error);
  }
  if (c.hard_error) throw NetworkError(where + ": connect failed: " + net::errno_text(c.error));
  throw TimeoutError(where + " not reachable within " + std::to_string(timeout.count()) +
                     " ms: " + net::errno_text(c.error));
}

[[noreturn]] void throw_server_error(const std::string& where, const ErrorMsg& e) {
  const std::string text = where + ": " + e.text;
  switch (e.code) {
    case ErrorCode::kTimeout:
      throw TimeoutError(text);
    case ErrorCode::kJobFailed:
      throw WorkerFailedError(text);
    case ErrorCode::kAuthFailed:
    case ErrorCode::kBadRequest:
    case ErrorCode::kStaleGeneration:
    case ErrorCode::kDuplicateSlot:
      break;
    case ErrorCode::kNotMember:
      throw NotMemberError(text);
  }
  throw ProtocolError(text);
}

}  // namespace

Client::Impl::Impl(const Endpoint& server, std::string_view secret, milliseconds timeout,
                   milliseconds heartbeat)
    : where_("rendezvous " + net::describe(server.host, server.port)), heartbeat_(heartbeat) {
  const auto deadline = Clock::now() + timeout;
  fd_ = connect_to(server, where_, deadline, timeout);
  try {  // the handshake runs on this thread; the reader starts after it
    auto challenge = receive_direct(MsgType::kChallenge, deadline, "Challenge", timeout);
    const auto& nonce = std::get<Challenge>(challenge.body).nonce;
    // Unanswered unless wrong: it goes out in one write with the first frame sent (the
    // first request, or a heartbeat), whose reply (or the server's kAuthFailed) comes back
    // on the reader thread.
    auth_frame_ = encode(Message{0, Auth{compute_mac(secret, kRendezvousAuthContext, nonce)}});
    // The server's current generation: the one a Join is for.
    generation_ = challenge.generation;
    stop_ = UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    wake_ = UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!stop_ || !wake_) {
      throw NetworkError(where_ + ": eventfd failed: " + net::errno_text(errno));
    }
  } catch (...) {
    fd_.reset();
    throw;
  }
  reader_ = std::thread([this] { read_loop(); });
}

Client::Impl::~Impl() {
  const std::uint64_t one = 1;
  if (stop_ && ::write(stop_.get(), &one, sizeof one) < 0) {
    // cannot fail for an eventfd below its maximum; the reader ends at its next heartbeat
  }
  if (reader_.joinable()) reader_.join();
  // A last heartbeat: what the collectives did since the one before (the straggler
  // report), unless the connection is already broken. Bounded; a failure is no matter.
  try {
    bool broken = false;
    {
      std::lock_guard lock(mutex_);
      broken = terminal_.has_value();
    }
    if (fd_ && !broken) {
      if (auto report = progress(); report && !report->samples.empty()) {
        send(Message{0, Heartbeat{std::move(report)}}, Clock::now() + kLastHeartbeat, "Heartbeat",
             kLastHeartbeat);
      }
    }
  } catch (const Error&) {
  }
}

void Client::Impl::io_failed(const net::IoResult& r, const std::string& what,
                             milliseconds timeout) const {
  switch (r.status) {
    case net::IoResult::Status::kTimeout:
      throw TimeoutError(where_ + ": no " + what + " within " + std::to_string(timeout.count()) +
                         " ms");
    case net::IoResult::Status::kClosed:
      throw NetworkError(where_ + " closed the connection while waiting for " + what);
    case net::IoResult::Status::kInterrupted:
      throw AbortedError(where_ + ": the wait for " + what + " was interrupted");
    case net::IoResult::Status::kOk:
    case net::IoResult::Status::kError:
      break;
  }
  throw NetworkError(where_ + ": I/O error while waiting for " + what + ": " + r.text());
}

void Client::Impl::send(const Message& m, Clock::time_point deadline, const std::string& what,
                        milliseconds timeout) {
  auto frame = encode(m);
  std::lock_guard lock(write_mutex_);
  if (!auth_frame_.empty()) {
    frame.insert(frame.begin(), auth_frame_.begin(), auth_frame_.end());
    auth_frame_.clear();
  }
  const auto r = net::send_all(fd_.get(), frame.data(), frame.size(), deadline, interrupt_fd_);
  if (!r.ok()) io_failed(r, "send of " + what, timeout);
}

// Reads one whole frame; before the reader thread exists, or on it.
std::variant<Message, net::IoResult, DecodeError> Client::Impl::read_frame(
    Clock::time_point deadline, int interrupt_fd) {
  std::vector<std::uint8_t> frame(kHeaderSize);
  auto r = net::recv_all(fd_.get(), frame.data(), frame.size(), deadline, interrupt_fd);
  if (!r.ok()) return r;
  auto header = decode_header(frame);
  if (auto* e = std::get_if<DecodeError>(&header)) return std::move(*e);
  frame.resize(kHeaderSize + std::get<Header>(header).length);
  r = net::recv_all(fd_.get(), frame.data() + kHeaderSize, frame.size() - kHeaderSize, deadline,
                    interrupt_fd);
  if (!r.ok()) return r;
  auto decoded = decode(frame);
  if (auto* e = std::get_if<DecodeError>(&decoded)) return std::move(*e);
  return std::move(std::get<Message>(decoded));
}

Message Client::Impl::receive_direct(MsgType expected, Clock::time_point deadline,
                                     const std::string& what, milliseconds timeout) {
  auto got = read_frame(deadline, interrupt_fd_);
  if (auto* r = std::get_if<net::IoResult>(&got)) io_failed(*r, what, timeout);
  if (auto* e = std::get_if<DecodeError>(&got)) {
    throw ProtocolError(where_ + ": bad frame while waiting for " + what + ": " + e->text);
  }
  return checked(std::move(std::get<Message>(got)), expected);
}

Message Client::Impl::checked(Message message, MsgType expected) const {
  if (auto* error = std::get_if<ErrorMsg>(&message.body)) throw_server_error(where_, *error);
  if (type_of(message.body) != expected) {
    throw ProtocolError(where_ + ": expected " + type_name(expected) + ", got " +
                        type_name(type_of(message.body)));
  }
  return message;
}

// Sends `m` and waits for its reply: a frame of generation `reply_gen` or later (default:
// m's). On any error but an interruption after the generation ended, the connection is
// closed: its state is unknown.
Message Client::Impl::request(const Message& m, MsgType expected, milliseconds timeout,
                              milliseconds grace, const std::string& what,
                              std::optional<std::uint32_t> join_gen) {
  try {
    return exchange(m, expected, timeout, grace, what, join_gen);
  } catch (const Superseded&) {
    throw;
  } catch (const AbortedError&) {
    if (!generation_end()) close_connection("interrupted while waiting for " + what);
    throw;
  } catch (...) {
    close_connection("an earlier error");
    throw;
  }
}

Message Client::Impl::exchange(const Message& m, MsgType expected, milliseconds timeout,
                               milliseconds grace, const std::string& what,
                               std::optional<std::uint32_t> join_gen) {
  {
    std::lock_guard lock(mutex_);
    // The server's error, sent before it closed, says more than the closed connection.
    for (const auto& reply : replies_) {
      if (auto* error = std::get_if<ErrorMsg>(&reply.body)) throw_server_error(where_, *error);
    }
    if (terminal_) throw NetworkError(*terminal_);
  }
  const auto deadline = Clock::now() + timeout + grace;
  try {
    send(m, deadline, type_name(type_of(m.body)), timeout);
  } catch (const NetworkError&) {
    // The connection is likely gone: the reader reads what the server sent before it closed,
    // and its error, if one came, is reported instead.
    await_reader_end(std::min(deadline, Clock::now() + kReaderEnd));
    std::lock_guard lock(mutex_);
    for (const auto& reply : replies_) {
      if (auto* error = std::get_if<ErrorMsg>(&reply.body)) throw_server_error(where_, *error);
    }
    throw;
  }
  for (;;) {
    drain(wake_.get());  // then look: what the reader adds afterwards wakes the poll below
    std::unique_lock lock(mutex_);
    while (!replies_.empty() && replies_.front().generation < m.generation &&
           !std::holds_alternative<ErrorMsg>(replies_.front().body)) {
      replies_.pop_front();  // a late reply to a request of an ended generation
    }
    if (!replies_.empty()) {
      Message reply = std::move(replies_.front());
      replies_.pop_front();
      lock.unlock();
      return checked(std::move(reply), expected);
    }
    if (join_gen && end_ && end_->ended >= *join_gen) throw Superseded{};
    if (terminal_) throw NetworkError(*terminal_ + " while waiting for " + what);
    lock.unlock();
    const int interrupt = interrupt_fd_;
    pollfd fds[2] = {{wake_.get(), POLLIN, 0}, {interrupt, POLLIN, 0}};
    const int n = ::poll(fds, interrupt >= 0 ? 2 : 1, net::poll_timeout_ms(deadline));
    if (n > 0 && fds[1].revents != 0) {
      throw AbortedError(where_ + ": the wait for " + what + " was interrupted");
    }
    if (n == 0 && Clock::now() >= deadline) {
      throw TimeoutError(where_ + ": no " + what + " within " + std::to_string(timeout.count()) +
                         " ms");
    }
  }
}

// Waits until the reader has seen the connection end, `limit` passes or the interrupt fd
// is raised.
void Client::Impl::await_reader_end(Clock::time_point limit) {
  for (;;) {
    drain(wake_.get());
    {
      std::lock_guard lock(mutex_);
      if (terminal_) return;
    }
    const int interrupt = interrupt_fd_;
    pollfd fds[2] = {{wake_.get(), POLLIN, 0}, {interrupt, POLLIN, 0}};
    const int n = ::poll(fds, interrupt >= 0 ? 2 : 1, net::poll_timeout_ms(limit));
    if ((n > 0 && interrupt >= 0 && fds[1].revents != 0) || Clock::now() >= limit) return;
  }
}

void Client::Impl::drain(int fd) {
  std::uint64_t count = 0;
  while (::read(fd, &count, sizeof count) > 0) {
  }
}

// Wakes a request waiting in exchange(); called with mutex_ held.
void Client::Impl::wake() {
  cv_.notify_all();
  const std::uint64_t one = 1;
  if (::write(wake_.get(), &one, sizeof one) < 0) {
    // the counter is far below its maximum: a waiter is woken already
  }
}

void Client::Impl::close_connection(const std::string& why) {
  std::lock_guard lock(mutex_);
  if (!terminal_) terminal_ = where_ + ": connection closed after " + why;
  ::shutdown(fd_.get(), SHUT_RDWR);  // the reader sees EOF and ends; the fd closes with Impl
  wake();
}

// The reader thread: frames to replies_ or the push handler, heartbeats on idle.
void Client::Impl::read_loop() {
  auto next_heartbeat = Clock::now() + heartbeat_;
  // A server's last error before it closed is worth more than a heartbeat that fails on the
  // closed connection: what arrived is read first, and after a failed send, what is left.
  std::optional<std::string> send_failed;
  for (;;) {
    pollfd fds[2] = {{fd_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    const int n = ::poll(fds, 2, send_failed ? 0 : net::poll_timeout_ms(next_heartbeat));
    if (n < 0 && errno != EINTR) return lost("poll failed: " + net::errno_text(errno));
    if (fds[1].revents != 0) return;
    if (n > 0 && fds[0].revents != 0) {
      auto got = read_frame(Clock::now() + kFrameTime, stop_.get());
      if (auto* r = std::get_if<net::IoResult>(&got)) {
        if (r->status == net::IoResult::Status::kInterrupted) return;
        if (send_failed) return lost(*send_failed);
        return lost(r->status == net::IoResult::Status::kClosed
                        ? where_ + " closed the connection"
                        : where_ + ": I/O error: " + r->text());
      }
      if (auto* e = std::get_if<DecodeError>(&got)) {
        return lost(where_ + ": bad frame: " + e->text);
      }
      dispatch(std::move(std::get<Message>(got)));
    } else if (send_failed) {
      return lost(*send_failed);  // nothing more to read
    }
    if (!send_failed && Clock::now() >= next_heartbeat) {
      next_heartbeat = Clock::now() + heartbeat_;
      try {
        send(Message{0, Heartbeat{progress()}}, Clock::now() + kHeartbeatSend, "Heartbeat",
             kHeartbeatSend);
      } catch (const Error& e) {
        send_failed = e.what();
      }
    }
  }
}

void Client::Impl::dispatch(Message message) {
  if (std::holds_alternative<Heartbeat>(message.body)) return;
  std::unique_lock lock(mutex_);
  if (auto* end = std::get_if<GenerationEnd>(&message.body)) {
    if (end_ && end_->ended >= message.generation && end_->end.next >= end->next) return;
    end_ = GenerationEndEvent{message.generation, std::move(*end)};
    const auto event = *end_;
    auto callback = on_end_;
    wake();
    lock.unlock();
    if (callback) callback(event);
    return;
  }
  replies_.push_back(std::move(message));
  wake();
}

void Client::Impl::lost(const std::string& why) {
  std::lock_guard lock(mutex_);
  if (!terminal_) terminal_ = why;
  wake();
}

std::optional<ProgressReport> Client::Impl::progress() const {
  std::function<std::optional<ProgressReport>()> source;
  {
    std::lock_guard lock(mutex_);
    source = progress_;
  }
  return source ? source() : std::nullopt;
}

std::string Client::Impl::local_address() const {
  if (!fd_) throw NetworkError(where_ + ": connection closed after an earlier error");
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw NetworkError(where_ + ": getsockname failed: " + std::strerror(errno));
  }
  char text[INET6_ADDRSTRLEN] = {};
  const void* src =
      addr.ss_family == AF_INET6
          ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&addr)->sin6_addr)
          : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&addr)->sin_addr);
  if (::inet_ntop(addr.ss_family, src, text, sizeof text) == nullptr) {
    throw NetworkError(where_ + ": inet_ntop failed: " + std::strerror(errno));
  }
  return text;
}

}  // namespace hvdrun::rdzv
