// One rendezvous connection on the server: frame reader, queued writer, deadline watchdog.
// Malformed frames and I/O errors close this session only; handlers never throw.
#include "rendezvous/session.h"

#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cstring>
#include <span>

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
// Bytes read at once while no larger frame is under way (a Join is about 100).
constexpr std::size_t kReadBuffer = 256;

}  // namespace

Session::Session(asio::ip::tcp::socket socket, const asio::ip::tcp::endpoint& remote,
                 std::shared_ptr<ServerCore> core, std::uint64_t id,
                 std::chrono::milliseconds auth_timeout)
    : socket_(std::move(socket)),
      core_(std::move(core)),
      id_(id),
      deadline_(socket_.get_executor(), auth_timeout) {
  peer_ip_ = remote.address().to_string();
  peer_ = (remote.address().is_v6() ? "[" + peer_ip_ + "]" : peer_ip_) + ":" +
          std::to_string(remote.port());
}

void Session::start() {
  try {
    nonce_ = make_nonce();
  } catch (const std::exception& e) {
    core_->log().error("cannot challenge {}: {}", peer_, e.what());
    close();
    return;
  }
  send(Message{core_->generation(), Challenge{nonce_}});
  auto self = shared_from_this();
  auto on_done = [self](std::exception_ptr e) {
    if (e) self->close();  // not expected: every handler turns errors into values
  };
  asio::co_spawn(socket_.get_executor(), read_loop(), on_done);
  watch_deadline();
}

void Session::send(const Message& message) {
  if (!is_open()) return;
  if (core_->log().should_log(spdlog::level::trace)) {
    core_->log().trace("-> {} {} gen {}", peer_, type_name(type_of(message.body)),
                       message.generation);
  }
  try {
    send_frame(encode(message));
  } catch (const std::exception& e) {
    core_->log().error("cannot send {} to {}: {}", type_name(type_of(message.body)), peer_,
                       e.what());
    fail(ErrorCode::kBadRequest, std::string("server cannot encode its reply: ") + e.what());
  }
}

void Session::send_frame(std::vector<std::uint8_t> frame) {
  if (!is_open()) return;
  outbox_bytes_ += frame.size();
  const std::size_t limit = kv_limits_for(core_->options()).max_unsent_bytes;
  if (outbox_bytes_ > limit) {  // the client does not read its replies
    core_->log().warn("closing {}: {} bytes of replies unread, over the limit of {}", peer_,
                      outbox_bytes_, limit);
    return close();
  }
  outbox_.push_back(std::move(frame));
  if (!writing_) {  // started from a posted handler: the rest of this one's sends join it
    writing_ = true;
    asio::post(socket_.get_executor(), [self = shared_from_this()] { self->write_outbox(); });
  }
}

void Session::fail(ErrorCode code, std::string text) {
  if (!is_open()) return;
  if (text.size() > kMaxString) text.resize(kMaxString);
  send(Message{core_->generation(), ErrorMsg{code, std::move(text)}});
  if (!is_open()) return;    // send() itself failed
  state_ = State::kClosing;  // closed once the error is written (write_done)
  deadline_.expires_after(kCloseGrace);
  gone();
}

void Session::close() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  boost::system::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
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
  // What arrived and is not handled yet: whole frames are taken from the front, so a client
  // that sends several at once costs one read. The buffer grows to the frame being read and
  // shrinks back after a large one.
  std::vector<std::uint8_t> buffer(kReadBuffer);
  std::size_t have = 0;
  while (is_open()) {
    std::size_t need = kHeaderSize;
    if (have >= kHeaderSize) {
      auto header = decode_header(std::span(buffer.data(), kHeaderSize));
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
      need = kHeaderSize + length;
    }
    if (have >= need) {
      auto message = decode(std::span(buffer.data(), need));
      last_heard = std::chrono::steady_clock::now();
      if (auto* e = std::get_if<DecodeError>(&message)) {
        core_->refuse(*this, e->text);
        break;
      }
      std::memmove(buffer.data(), buffer.data() + need, have - need);
      have -= need;
      if (buffer.size() > kReadBuffer && have <= kReadBuffer) {
        buffer.resize(kReadBuffer);
        buffer.shrink_to_fit();
      }
      core_->on_message(self, std::move(std::get<Message>(message)));
      continue;
    }
    if (buffer.size() < need) buffer.resize(need);
    auto [ec, n] = co_await socket_.async_read_some(
        asio::buffer(buffer.data() + have, buffer.size() - have), kUseTuple);
    if (ec || !is_open()) break;
    have += n;
  }
  if (state_ != State::kClosing) {
    core_->log().debug("{} disconnected", peer_);
    close();
  }
}

void Session::write_outbox() {
  // Everything queued goes out in one gathered write; what is queued meanwhile, in the next.
  if (state_ == State::kClosed) return;
  sending_.swap(outbox_);
  outbox_.clear();
  std::vector<asio::const_buffer> buffers;
  buffers.reserve(sending_.size());
  for (const auto& frame : sending_) buffers.push_back(asio::buffer(frame));
  asio::async_write(socket_, buffers,
                    [self = shared_from_this()](const boost::system::error_code& ec,
                                                std::size_t n) { self->write_done(ec, n); });
}

void Session::write_done(const boost::system::error_code& ec, std::size_t written) {
  sending_.clear();
  outbox_bytes_ -= written;
  if (ec || state_ == State::kClosed) return close();
  if (!outbox_.empty()) return write_outbox();
  writing_ = false;
  if (state_ == State::kClosing) close();  // the error that ends the session is out
}

void Session::watch_deadline() {
  // A plain handler, not a coroutine: it is pending for the session's whole life.
  deadline_.async_wait(
      [self = shared_from_this()](const boost::system::error_code&) { self->on_deadline(); });
}

void Session::on_deadline() {
  if (state_ == State::kClosed) return;
  if (asio::steady_timer::clock_type::now() >= deadline_.expiry()) {
    if (state_ != State::kChallenged) return close();  // close-after-error grace expired
    core_->log_refusal(peer_, "did not authenticate in time");
    fail(ErrorCode::kTimeout, "not authenticated within " +
                                  std::to_string(core_->options().auth_timeout.count()) + " ms");
  }
  if (state_ != State::kClosed) watch_deadline();  // a new or moved deadline
}

}  // namespace hvdrun::rdzv
