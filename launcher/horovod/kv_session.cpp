// KvSession (kv_session.h): read one request, answer it, close. After an error reply it
// shuts down its sending side and reads (and drops) what the client still sends, briefly,
// so that closing does not reset the connection before the client has read the reply.
#include "launcher/horovod/kv_session.h"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <charconv>
#include <cstdint>
#include <limits>
#include <string_view>

#include "common/use_tuple.h"
#include "launcher/horovod/kv_server_core.h"

namespace hvdrun::launcher::horovod {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace {

// After an error reply: read and drop at most this much, for at most this long.
constexpr std::size_t kDrainBytes = 64u << 10;
constexpr std::chrono::milliseconds kDrainTime{1000};

// Writes "HTTP/1.1 <code> <reason>\r\nContent-Length: <n>\r\nConnection: close\r\n\r\n"
// into `out` (Horovod's client needs the exact-case Content-Length, also for 0) and returns
// its length.
std::size_t format_head(std::array<char, 128>& out, http::status status, std::size_t length) {
  char* p = out.data();
  char* const end = out.data() + out.size();
  auto put = [&p, end](std::string_view text) {
    const auto n = std::min<std::size_t>(text.size(), static_cast<std::size_t>(end - p));
    p = std::copy_n(text.data(), n, p);
  };
  auto put_number = [&p, end](std::size_t value) { p = std::to_chars(p, end, value).ptr; };
  put("HTTP/1.1 ");
  put_number(static_cast<unsigned>(status));
  put(" ");
  put(http::obsolete_reason(status));
  put("\r\nContent-Length: ");
  put_number(length);
  put("\r\nConnection: close\r\n\r\n");
  return static_cast<std::size_t>(p - out.data());
}

}  // namespace

KvSession::KvSession(asio::ip::tcp::socket socket, asio::ip::tcp::endpoint peer,
                     std::shared_ptr<KvServerCore> core)
    : stream_(std::move(socket)),
      peer_(peer),
      core_(std::move(core)),
      hold_(stream_.get_executor()) {
  const auto& options = core_->options();
  parser_.header_limit(static_cast<std::uint32_t>(
      std::min<std::size_t>(options.max_header_bytes, std::numeric_limits<std::uint32_t>::max())));
  parser_.body_limit(static_cast<std::uint64_t>(options.max_body_bytes));
}

void KvSession::start() {
  auto self = shared_from_this();
  asio::co_spawn(stream_.get_executor(), run(), [self](std::exception_ptr e) {
    if (e) self->core_->session_failed(*self, e);
    self->close();
    self->core_->session_ended(*self);
  });
}

void KvSession::close() {
  hold_.cancel();
  boost::system::error_code ignored;
  stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  stream_.close();
}

void KvSession::deliver(KvReply reply) {
  delivered_ = std::move(reply);
  hold_.cancel();
}

std::string KvSession::peer() const {
  if (peer_.port() == 0) return "unknown peer";
  return peer_.address().to_string() + ":" + std::to_string(peer_.port());
}

asio::awaitable<void> KvSession::run() {
  auto self = shared_from_this();
  stream_.expires_after(core_->options().request_timeout);
  auto [ec, n] = co_await http::async_read(stream_, buffer_, parser_, kUseTuple);
  std::optional<KvReply> reply;
  if (ec) {
    reply = core_->read_failed(ec, *this);
  } else {
    reply = core_->handle(parser_.get(), *this);
    if (!reply) reply = co_await held_reply();
  }
  if (!reply || !stream_.socket().is_open()) co_return;
  co_await write_reply(*reply);
  if (ec) co_await drain();
}

asio::awaitable<std::optional<KvReply>> KvSession::held_reply() {
  hold_.expires_after(core_->hold_of(*this));
  while (!delivered_ && stream_.socket().is_open()) {
    auto [ec] = co_await hold_.async_wait(kUseTuple);
    if (ec || delivered_) continue;
    if (auto reply = core_->held_too_long(*this)) co_return reply;  // expired
    hold_.expires_after(core_->hold_of(*this));                     // held again
  }
  co_return std::move(delivered_);
}

asio::awaitable<void> KvSession::write_reply(const KvReply& reply) {
  const std::size_t length = reply.body ? reply.body->size() : 0;
  const std::size_t head = format_head(head_, reply.status, length);
  const std::array<asio::const_buffer, 2> buffers{
      asio::buffer(head_.data(), head),
      reply.body ? asio::buffer(*reply.body) : asio::const_buffer()};
  stream_.expires_after(core_->options().request_timeout);
  auto [ec, n] = co_await asio::async_write(stream_, buffers, kUseTuple);
  if (ec == beast::error::timeout) core_->reply_timed_out(*this, n, head + length);
}

asio::awaitable<void> KvSession::drain() {
  if (!stream_.socket().is_open()) co_return;
  boost::system::error_code ignored;
  stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  stream_.expires_after(
      std::min<std::chrono::milliseconds>(core_->options().request_timeout, kDrainTime));
  buffer_.clear();
  std::size_t dropped = 0;
  while (dropped < kDrainBytes) {
    auto [ec, n] = co_await stream_.async_read_some(buffer_.prepare(4096), kUseTuple);
    if (ec) break;
    dropped += n;
  }
}

}  // namespace hvdrun::launcher::horovod
