// One rendezvous connection on the server: frame reader, queued writer, close-after-error grace.
// Malformed frames and I/O errors close this session only; handlers never throw.
#include "rendezvous/session.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <cstring>
#include <span>

#include "rendezvous/log.h"
#include "rendezvous/server_core.h"

namespace hvdrun::rdzv {
namespace asio = boost::asio;
namespace {

// Largest body accepted before authentication (an Auth body is kMacSize bytes).
constexpr std::uint32_t kMaxPreAuthBody = 64;
constexpr std::chrono::seconds kCloseGrace{1};
// Bytes read at once while no larger frame is under way (a Join is about 100).
constexpr std::size_t kReadBuffer = 256;

}  // namespace

Session::Session(asio::ip::tcp::socket socket, const asio::ip::tcp::endpoint& remote,
                 std::shared_ptr<ServerCore> core, std::uint64_t id)
    : socket_(std::move(socket)),
      core_(std::move(core)),
      id_(id),
      held_(core_->budget()),
      close_grace_(socket_.get_executor()) {
  peer_ip_ = remote.address().to_string();
  peer_ = (remote.address().is_v6() ? "[" + peer_ip_ + "]" : peer_ip_) + ":" +
          std::to_string(remote.port());
}

void Session::start() {
  try {
    nonce_ = core_->next_nonce();
  } catch (const std::exception& e) {
    core_->log().error("cannot challenge {}: {}", peer_, e.what());
    close();
    return;
  }
  send(Message{core_->generation(), Challenge{nonce_}});
  read_more();
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
  if (!held_.grow(frame.size())) return over_budget("a reply of", frame.size());
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
  close_grace_.expires_after(kCloseGrace);
  close_grace_.async_wait([self = shared_from_this()](const boost::system::error_code&) {
    if (self->state_ == State::kClosing) self->close();  // the error was not taken in time
  });
  gone();
}

void Session::close() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  boost::system::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  close_grace_.cancel();
  if (!authenticated_) core_->challenge_ended();
  gone();
}

void Session::authenticated() {
  state_ = State::kAuthenticated;
  authenticated_ = true;
  core_->challenge_ended();
}

void Session::gone() {
  if (notified_gone_) return;
  notified_gone_ = true;
  core_->session_gone(*this);
}

void Session::read_more() {
  if (in_.size() < kReadBuffer) in_.resize(kReadBuffer);
  socket_.async_read_some(asio::buffer(in_.data() + in_have_, in_.size() - in_have_),
                          [self = shared_from_this()](const boost::system::error_code& ec,
                                                      std::size_t n) { self->on_read(ec, n); });
}

void Session::on_read(const boost::system::error_code& ec, std::size_t n) {
  if (ec || !is_open()) {
    if (state_ != State::kClosing && state_ != State::kClosed) {
      core_->log().debug("{} disconnected", peer_);
    }
    if (state_ != State::kClosing) close();
    return;
  }
  in_have_ += n;
  try {
    handle_frames();
  } catch (const std::exception& e) {  // not expected (handlers turn errors into values), but
    // it ends this connection only, never the server's io_context
    core_->log().error("closing {}: {}", peer_, e.what());
    close();
  }
}

void Session::handle_frames() {
  auto self = shared_from_this();  // on_message may close this session
  while (is_open()) {
    std::size_t need = kHeaderSize;
    if (in_have_ >= kHeaderSize) {
      auto header = decode_header(std::span(in_.data(), kHeaderSize));
      if (auto* e = std::get_if<DecodeError>(&header)) return core_->refuse(*this, e->text);
      const auto length = std::get<Header>(header).length;
      if (state_ == State::kChallenged && length > kMaxPreAuthBody) {
        return core_->refuse(*this, "frame body of " + std::to_string(length) +
                                        " bytes before authentication (limit " +
                                        std::to_string(kMaxPreAuthBody) + ")");
      }
      need = kHeaderSize + length;
    }
    if (in_have_ < need) {
      if (in_.size() < need) {
        const std::size_t beyond = in_.size() > kReadBuffer ? in_.size() - kReadBuffer : 0;
        if (need > kReadBuffer && !held_.grow(need - kReadBuffer - beyond)) {
          return over_budget("a frame of", need);
        }
        in_.resize(need);
      }
      return read_more();
    }
    auto message = decode(std::span(in_.data(), need));
    last_heard = std::chrono::steady_clock::now();
    if (auto* e = std::get_if<DecodeError>(&message)) return core_->refuse(*this, e->text);
    std::memmove(in_.data(), in_.data() + need, in_have_ - need);
    in_have_ -= need;
    if (in_.size() > kReadBuffer && in_have_ <= kReadBuffer) {
      held_.shrink(in_.size() - kReadBuffer);
      in_.resize(kReadBuffer);
      in_.shrink_to_fit();
    }
    core_->on_message(self, std::move(std::get<Message>(message)));
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
  held_.shrink(written);
  if (ec || state_ == State::kClosed) return close();
  if (!outbox_.empty()) return write_outbox();
  writing_ = false;
  if (state_ == State::kClosing) close();  // the error that ends the session is out
}

// The server would hold more than its budget for all clients: this connection, which asks for
// more, is closed.
void Session::over_budget(const char* what, std::size_t bytes) {
  const MemoryBudget& budget = held_.budget();
  core_->log().warn(
      "closing {}: {} {} bytes would make the server hold more than {} bytes for its clients "
      "({} held now, {} of them for this connection)",
      peer_, what, bytes, budget.limit(), budget.held(), held_.held());
  close();
}

void Session::authentication_timed_out() {
  if (state_ != State::kChallenged) return;
  core_->log_refusal(peer_, "did not authenticate in time");
  fail(ErrorCode::kTimeout,
       "not authenticated within " + std::to_string(core_->options().auth_timeout.count()) + " ms");
}

}  // namespace hvdrun::rdzv
