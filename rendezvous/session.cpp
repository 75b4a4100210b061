// One rendezvous connection on the server: frame reader, queued writer, deadline watchdog.
// Malformed frames and I/O errors close this session only; handlers never throw.
#include "rendezvous/session.h"

#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "rendezvous/auth.h"
#include "rendezvous/log.h"
#include "rendezvous/server_core.h"

namespace hvdrun::rdzv {
namespace asio = boost::asio;
namespace {

constexpr auto kUseTuple = asio::as_tuple(asio::use_awaitable);
// Largest body accepted before authentication (an Auth body is kMacSize bytes).
constexpr std::uint32_t kMaxPreAuthBody = 64;
constexpr std::chrono::seconds kCloseGrace{1};

}  // namespace

Session::Session(asio::ip::tcp::socket socket, std::shared_ptr<ServerCore> core, std::uint64_t id,
                 std::chrono::milliseconds auth_timeout)
    : socket_(std::move(socket)),
      core_(std::move(core)),
      id_(id),
      wake_(socket_.get_executor(), asio::steady_timer::time_point::max()),
      deadline_(socket_.get_executor(), auth_timeout) {
  boost::system::error_code ec;
  auto remote = socket_.remote_endpoint(ec);
  if (ec) {
    peer_ = peer_ip_ = "unknown peer";
  } else {
    peer_ip_ = remote.address().to_string();
    peer_ = (remote.address().is_v6() ? "[" + peer_ip_ + "]" : peer_ip_) + ":" +
            std::to_string(remote.port());
  }
}

void Session::start() {
  try {
    nonce_ = make_nonce();
  } catch (const std::exception& e) {
    logger()->error("cannot challenge {}: {}", peer_, e.what());
    close();
    return;
  }
  send(Message{0, Challenge{nonce_}});
  auto self = shared_from_this();
  auto on_done = [self](std::exception_ptr e) {
    if (e) self->close();  // not expected: every handler turns errors into values
  };
  asio::co_spawn(socket_.get_executor(), read_loop(), on_done);
  asio::co_spawn(socket_.get_executor(), write_loop(), on_done);
  asio::co_spawn(socket_.get_executor(), watchdog(), on_done);
}

void Session::send(const Message& message) {
  if (!is_open()) return;
  logger()->trace("-> {} {} gen {}", peer_, type_name(type_of(message.body)), message.generation);
  try {
    send_frame(encode(message));
  } catch (const std::exception& e) {
    logger()->error("cannot send {} to {}: {}", type_name(type_of(message.body)), peer_, e.what());
    fail(ErrorCode::kBadRequest, std::string("server cannot encode its reply: ") + e.what());
  }
}

void Session::send_frame(std::vector<std::uint8_t> frame) {
  if (!is_open()) return;
  outbox_bytes_ += frame.size();
  const std::size_t limit = kv_limits_for(core_->options()).max_unsent_bytes;
  if (outbox_bytes_ > limit) {  // the client does not read its replies
    logger()->warn("closing {}: {} bytes of replies unread, over the limit of {}", peer_,
                   outbox_bytes_, limit);
    return close();
  }
  outbox_.push_back(std::move(frame));
  wake_.cancel();
}

void Session::fail(ErrorCode code, std::string text) {
  if (!is_open()) return;
  if (text.size() > kMaxString) text.resize(kMaxString);
  send(Message{core_->generation(), ErrorMsg{code, std::move(text)}});
  if (!is_open()) return;  // send() itself failed
  state_ = State::kClosing;
  deadline_.expires_after(kCloseGrace);
  wake_.cancel();
  gone();
}

void Session::close() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  boost::system::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  wake_.cancel();
  deadline_.cancel();
  gone();
}

void Session::authenticated() {
  state_ = State::kAuthenticated;
  deadline_.expires_at(asio::steady_timer::time_point::max());
}

void Session::gone() {
  if (notified_gone_) return;
  notified_gone_ = true;
  core_->session_gone(*this);
}

asio::awaitable<void> Session::read_loop() {
  auto self = shared_from_this();
  std::vector<std::uint8_t> frame;
  while (is_open()) {
    frame.resize(kHeaderSize);
    auto [ec, n] = co_await asio::async_read(socket_, asio::buffer(frame), kUseTuple);
    if (ec || !is_open()) break;
    auto header = decode_header(frame);
    if (auto* e = std::get_if<DecodeError>(&header)) {
      core_->refuse(*this, e->text);
      break;
    }
    const auto length = std::get<Header>(header).length;
    if (state_ == State::kChallenged && length > kMaxPreAuthBody) {
      core_->refuse(*this, "frame body of " + std::to_string(length) +
                               " bytes before authentication (limit " +
                               std::to_string(kMaxPreAuthBody) + ")");
      break;
    }
    frame.resize(kHeaderSize + length);
    if (length > 0) {
      auto body = asio::buffer(frame.data() + kHeaderSize, length);
      auto [ec2, n2] = co_await asio::async_read(socket_, body, kUseTuple);
      if (ec2 || !is_open()) break;
    }
    auto message = decode(frame);
    last_heard = std::chrono::steady_clock::now();
    if (auto* e = std::get_if<DecodeError>(&message)) {
      core_->refuse(*this, e->text);
      break;
    }
    core_->on_message(self, std::move(std::get<Message>(message)));
  }
  if (state_ != State::kClosing) {
    logger()->debug("{} disconnected", peer_);
    close();
  }
}

asio::awaitable<void> Session::write_loop() {
  auto self = shared_from_this();
  while (state_ != State::kClosed) {
    if (outbox_.empty()) {
      if (state_ == State::kClosing) break;
      co_await wake_.async_wait(kUseTuple);
      continue;
    }
    auto [ec, n] = co_await asio::async_write(socket_, asio::buffer(outbox_.front()), kUseTuple);
    if (ec) break;
    if (!outbox_.empty()) {
      outbox_bytes_ -= outbox_.front().size();
      outbox_.pop_front();
    }
  }
  close();
}

asio::awaitable<void> Session::watchdog() {
  auto self = shared_from_this();
  while (state_ != State::kClosed) {
    co_await deadline_.async_wait(kUseTuple);
    if (state_ == State::kClosed) break;
    if (asio::steady_timer::clock_type::now() < deadline_.expiry()) continue;  // moved
    if (state_ == State::kChallenged) {
      core_->log_refusal(peer_, "did not authenticate in time");
      fail(ErrorCode::kTimeout, "not authenticated within " +
                                    std::to_string(core_->options().auth_timeout.count()) + " ms");
    } else {
      close();  // close-after-error grace expired
    }
  }
}

}  // namespace hvdrun::rdzv
