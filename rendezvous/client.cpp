// Blocking rendezvous client (worker side): connect + HMAC handshake, JOIN/ASSIGN, key-value
// store and barriers, each with a deadline. After any error the connection is closed and
// later calls throw NetworkError.
#include "rendezvous/client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <type_traits>

#include "common/socket_io.h"
#include "hvdrun/error.h"
#include "rendezvous/auth.h"

namespace hvdrun::rdzv {
namespace {

using Clock = net::Clock;
using std::chrono::milliseconds;
// The client waits this much longer than the server's own deadline so that the server's
// message (which names what is missing) arrives first.
constexpr milliseconds kServerGrace{2000};
constexpr std::string_view kAuthContext = "rdzv";

std::uint32_t to_ms(milliseconds timeout) {
  return static_cast<std::uint32_t>(std::clamp<long long>(timeout.count(), 0, UINT32_MAX));
}

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
  }
  throw ProtocolError(text);
}

}  // namespace

class Client::Impl {
 public:
  Impl(const Endpoint& server, std::string_view secret, milliseconds timeout)
      : where_("rendezvous " + net::describe(server.host, server.port)) {
    const auto deadline = Clock::now() + timeout;
    fd_ = connect_to(server, where_, deadline, timeout);
    guarded([&] {
      auto challenge = receive(MsgType::kChallenge, deadline, "Challenge", timeout);
      const auto& nonce = std::get<Challenge>(challenge.body).nonce;
      send(Message{0, Auth{compute_mac(secret, kAuthContext, nonce)}}, deadline, "Auth", timeout);
      // The server's current generation: the one a Join is for.
      generation_ = receive(MsgType::kAuthOk, deadline, "AuthOk", timeout).generation;
    });
  }

  Assignment join(const Join& join, milliseconds timeout) {
    return guarded([&] {
      const auto deadline = Clock::now() + timeout + kServerGrace;
      send(Message{generation_, join}, deadline, "Join", timeout);
      auto reply = receive(MsgType::kAssign, deadline, "Assign after Join", timeout);
      generation_ = reply.generation;
      return Assignment{reply.generation, std::move(std::get<Assign>(reply.body))};
    });
  }

  void set(std::string_view key, std::string_view value, milliseconds timeout) {
    guarded([&] {
      const auto deadline = Clock::now() + timeout;
      send(Message{generation_, KvSet{std::string(key), std::string(value)}}, deadline, "KvSet",
           timeout);
      auto reply = receive(MsgType::kKvValue, deadline, "ack of KvSet", timeout);
      check_key(std::get<KvValue>(reply.body).key, key);
    });
  }

  std::string get(std::string_view key, milliseconds timeout) {
    return guarded([&] {
      const auto deadline = Clock::now() + timeout + kServerGrace;
      const std::string what = "value of key '" + std::string(key) + "'";
      send(Message{generation_, KvGet{std::string(key), to_ms(timeout)}}, deadline, "KvGet",
           timeout);
      auto reply = receive(MsgType::kKvValue, deadline, what, timeout);
      auto& kv = std::get<KvValue>(reply.body);
      check_key(kv.key, key);
      return std::move(kv.value);
    });
  }

  void barrier(std::string_view name, milliseconds timeout) {
    guarded([&] {
      const auto deadline = Clock::now() + timeout + kServerGrace;
      const std::string what = "completion of barrier '" + std::string(name) + "'";
      send(Message{generation_, Barrier{std::string(name), to_ms(timeout)}}, deadline, "Barrier",
           timeout);
      auto reply = receive(MsgType::kBarrierDone, deadline, what, timeout);
      if (std::get<BarrierDone>(reply.body).name != name) {
        throw ProtocolError(where_ + ": BarrierDone for '" +
                            std::get<BarrierDone>(reply.body).name + "', expected '" +
                            std::string(name) + "'");
      }
    });
  }

  std::uint32_t generation() const noexcept { return generation_; }
  void set_interrupt(int fd) noexcept { interrupt_fd_ = fd; }

  std::string local_address() const {
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

 private:
  // Runs f; on any error closes the connection (its state is unknown) and rethrows.
  template <class F>
  std::invoke_result_t<F&> guarded(F&& f) {
    if (!fd_) throw NetworkError(where_ + ": connection closed after an earlier error");
    try {
      return f();
    } catch (...) {
      fd_.reset();
      throw;
    }
  }

  void check_key(const std::string& got, std::string_view want) const {
    if (got != want) {
      throw ProtocolError(where_ + ": reply for key '" + got + "', expected '" + std::string(want) +
                          "'");
    }
  }

  void io_failed(const net::IoResult& r, const std::string& what, milliseconds timeout) const {
    switch (r.status) {
      case net::IoResult::Status::kOk:
        return;
      case net::IoResult::Status::kTimeout:
        throw TimeoutError(where_ + ": no " + what + " within " + std::to_string(timeout.count()) +
                           " ms");
      case net::IoResult::Status::kClosed:
        throw NetworkError(where_ + " closed the connection while waiting for " + what);
      case net::IoResult::Status::kError:
        throw NetworkError(where_ + ": I/O error while waiting for " + what + ": " + r.text());
      case net::IoResult::Status::kInterrupted:
        throw AbortedError(where_ + ": the wait for " + what + " was interrupted");
    }
  }

  void send(const Message& m, Clock::time_point deadline, const std::string& what,
            milliseconds timeout) {
    const auto frame = encode(m);
    io_failed(net::send_all(fd_.get(), frame.data(), frame.size(), deadline, interrupt_fd_),
              "send of " + what, timeout);
  }

  Message receive(MsgType expected, Clock::time_point deadline, const std::string& what,
                  milliseconds timeout) {
    std::vector<std::uint8_t> frame(kHeaderSize);
    io_failed(net::recv_all(fd_.get(), frame.data(), frame.size(), deadline, interrupt_fd_), what,
              timeout);
    auto header = decode_header(frame);
    if (auto* e = std::get_if<DecodeError>(&header)) {
      throw ProtocolError(where_ + ": bad frame while waiting for " + what + ": " + e->text);
    }
    frame.resize(kHeaderSize + std::get<Header>(header).length);
    io_failed(net::recv_all(fd_.get(), frame.data() + kHeaderSize, frame.size() - kHeaderSize,
                            deadline, interrupt_fd_),
              what, timeout);
    auto decoded = decode(frame);
    if (auto* e = std::get_if<DecodeError>(&decoded)) {
      throw ProtocolError(where_ + ": bad frame while waiting for " + what + ": " + e->text);
    }
    auto& message = std::get<Message>(decoded);
    if (auto* error = std::get_if<ErrorMsg>(&message.body)) throw_server_error(where_, *error);
    if (type_of(message.body) != expected) {
      throw ProtocolError(where_ + ": expected " + type_name(expected) + ", got " +
                          type_name(type_of(message.body)));
    }
    return std::move(message);
  }

  std::string where_;
  UniqueFd fd_;
  int interrupt_fd_ = -1;
  std::uint32_t generation_ = 0;
};

Client::Client(const Endpoint& server, std::string_view secret, milliseconds timeout)
    : impl_(std::make_unique<Impl>(server, secret, timeout)) {}
Client::~Client() = default;
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;

namespace {
template <class P>
P& live(const std::unique_ptr<P>& impl) {
  if (!impl) throw NetworkError("rendezvous client used after move");
  return *impl;
}
}  // namespace

Assignment Client::join(const Join& join, milliseconds timeout) {
  return live(impl_).join(join, timeout);
}
void Client::set(std::string_view key, std::string_view value, milliseconds timeout) {
  live(impl_).set(key, value, timeout);
}
std::string Client::get(std::string_view key, milliseconds timeout) {
  return live(impl_).get(key, timeout);
}
void Client::barrier(std::string_view name, milliseconds timeout) {
  live(impl_).barrier(name, timeout);
}
void Client::set_interrupt(int fd) noexcept {
  impl_->set_interrupt(fd);
}

std::uint32_t Client::generation() const noexcept {
  return impl_ ? impl_->generation() : 0;
}
std::string Client::local_address() const {
  return live(impl_).local_address();
}

}  // namespace hvdrun::rdzv
