// KvServerCore (kv_server_core.h): binding, the accept loop with its pause at
// max_connections, the session list, close(), and the outcome of requests that could not be
// read (limits, timeouts, malformed HTTP).
#include "launcher/horovod/kv_server_core.h"

#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>

#include "common/tcp_listen.h"
#include "common/use_tuple.h"
#include "hvdrun/error.h"

namespace hvdrun::launcher::horovod {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace {

constexpr std::chrono::milliseconds kAcceptRetry{100};

asio::ip::tcp::acceptor listen_on(asio::io_context& io, const KvServerOptions& o) {
  return listen_tcp(io, o.bind_address, o.port, "Horovod rendezvous");
}

std::string describe(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

bool is_parse_error(const boost::system::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_method).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message;
}

}  // namespace

KvServerCore::KvServerCore(asio::io_context& io, KvServerOptions options, KvPlan plan)
    : io_(io),
      options_(std::move(options)),
      acceptor_(listen_on(io, options_)),
      port_(acceptor_.local_endpoint().port()),
      name_("Horovod rendezvous on " + options_.bind_address + ":" + std::to_string(port_)),
      store_(std::move(plan), options_.max_stored_bytes),
      room_(io),
      not_in_job_(std::make_shared<const std::string>(kNotInJob)) {
  if (options_.max_connections == 0) options_.max_connections = 1;
  kv_logger()->debug("{}: listening", name_);
}

void KvServerCore::start() {
  asio::co_spawn(io_, accept_loop(), [name = name_](std::exception_ptr e) {
    if (e) kv_logger()->error("{}: stopped accepting: {}", name, describe(e));
  });
}

asio::awaitable<void> KvServerCore::accept_loop() {
  auto self = shared_from_this();
  asio::steady_timer backoff(io_);
  while (!closed_) {
    if (sessions_.size() >= options_.max_connections && !co_await wait_for_room()) break;
    auto [ec, socket] = co_await acceptor_.async_accept(accepted_peer_, kUseTuple);
    if (closed_ || ec == asio::error::operation_aborted) break;
    if (ec) {  // e.g. out of file descriptors: try again after a pause
      std::string held;
      if (may_warn(Limit::kAcceptFailed, held)) {
        kv_logger()->warn("{}: accept failed: {}; retrying in {} ms{}", name_, ec.message(),
                          kAcceptRetry.count(), held);
      }
      backoff.expires_after(kAcceptRetry);
      co_await backoff.async_wait(kUseTuple);
      continue;
    }
    if (options_.admit && !admitted(socket)) continue;
    try {
      add_session(std::move(socket));
    } catch (const std::exception& e) {  // out of memory: drop this connection only
      kv_logger()->error("{}: cannot serve {}: {}", name_, accepted_peer_.address().to_string(),
                         e.what());
    }
  }
}

bool KvServerCore::admitted(asio::ip::tcp::socket& socket) {
  boost::system::error_code ec;
  const auto local = socket.local_endpoint(ec);
  const std::string why =
      ec ? "its address is unknown (" + ec.message() + ")" : options_.admit(local, accepted_peer_);
  if (why.empty()) return true;
  std::string held;
  if (may_warn(Limit::kRefusedPeer, held)) {
    kv_logger()->warn(
        "{}: refused the connection from {}: {}{}", name_,
        accepted_peer_.address().to_string() + ":" + std::to_string(accepted_peer_.port()), why,
        held);
  }
  socket.close(ec);
  return false;
}

asio::awaitable<bool> KvServerCore::wait_for_room() {
  std::string held;
  if (may_warn(Limit::kConnections, held)) {
    kv_logger()->warn(
        "{}: {} connections open, the limit max_connections={}; new connections wait in the "
        "listen backlog until one closes{}",
        name_, sessions_.size(), options_.max_connections, held);
  }
  paused_ = true;
  while (!closed_ && sessions_.size() >= options_.max_connections) {
    room_.expires_at(asio::steady_timer::time_point::max());
    co_await room_.async_wait(kUseTuple);
  }
  paused_ = false;
  co_return !closed_;
}

void KvServerCore::add_session(asio::ip::tcp::socket socket) {
  boost::system::error_code ignored;
  socket.set_option(asio::ip::tcp::no_delay(true), ignored);
  auto session = std::make_shared<KvSession>(std::move(socket), accepted_peer_, shared_from_this());
  session->slot = sessions_.size();
  sessions_.push_back(session);
  peak_connections_ = std::max(peak_connections_, sessions_.size());
  session->start();
}

void KvServerCore::session_ended(KvSession& session) {
  const std::size_t slot = session.slot;
  if (slot >= sessions_.size() || sessions_[slot].lock().get() != &session) return;
  if (slot + 1 != sessions_.size()) {
    sessions_[slot] = std::move(sessions_.back());
    if (auto moved = sessions_[slot].lock()) moved->slot = slot;
  }
  sessions_.pop_back();
  if (paused_) room_.cancel();
}

void KvServerCore::session_failed(const KvSession& session, const std::exception_ptr& error) {
  kv_logger()->error("{}: connection from {} failed: {}", name_, session.peer(), describe(error));
}

void KvServerCore::close() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  room_.cancel();
  for (auto& weak : sessions_) {
    if (auto session = weak.lock()) session->close();
  }
  kv_logger()->debug("{}: closed with {} connections open", name_, sessions_.size());
  log_held_back();
}

void KvServerCore::log_held_back() {
  std::string summary;
  for (std::size_t i = 0; i < static_cast<std::size_t>(Limit::kCount); ++i) {
    const auto limit = static_cast<Limit>(i);
    if (const auto n = limits_.held_back(limit); n > 0) {
      summary += (summary.empty() ? "" : ", ") + std::to_string(n) + " about " +
                 std::string(limit_name(limit));
    }
  }
  if (!summary.empty()) kv_logger()->warn("{}: warnings not shown: {}", name_, summary);
}

void KvServerCore::reset(KvPlan plan) {
  rank_queries_.next_generation(plan.survivors, plan.global_size);
  store_.reset(std::move(plan));
  kv_logger()->debug("{}: store reset for a new plan", name_);
  answer_held_queries();
}

KvServerStats KvServerCore::stats() const {
  KvServerStats s;
  s.open_connections = sessions_.size();
  s.peak_connections = peak_connections_;
  s.requests = requests_;
  s.stored_bytes = store_.stored_bytes();
  s.stored_keys = store_.stored_keys();
  s.refused_body = limits_.hits(Limit::kBodyBytes);
  s.refused_header = limits_.hits(Limit::kHeaderBytes);
  s.refused_stored = limits_.hits(Limit::kStoredBytes);
  s.refused_peers = limits_.hits(Limit::kRefusedPeer);
  s.connection_pauses = limits_.hits(Limit::kConnections);
  s.timeouts = limits_.hits(Limit::kRequestTimeout);
  s.bad_requests = limits_.hits(Limit::kBadRequest);
  s.elastic_queries = limits_.hits(Limit::kElasticQuery);
  s.held_queries = held_queries_.size();
  return s;
}

std::optional<KvReply> KvServerCore::read_failed(const boost::system::error_code& ec,
                                                 const KvSession& session) {
  std::string held;
  if (ec == http::error::header_limit) {
    if (may_warn(Limit::kHeaderBytes, held)) {
      kv_logger()->warn("{}: refused a request from {}: header over max_header_bytes={} (431){}",
                        name_, session.peer(), options_.max_header_bytes, held);
    }
    return KvReply{http::status::request_header_fields_too_large, nullptr};
  }
  if (ec == http::error::body_limit) {
    if (may_warn(Limit::kBodyBytes, held)) {
      kv_logger()->warn("{}: refused a request from {}: body over max_body_bytes={} (413){}", name_,
                        session.peer(), options_.max_body_bytes, held);
    }
    return KvReply{http::status::payload_too_large, nullptr};
  }
  if (ec == beast::error::timeout) {
    if (may_warn(Limit::kRequestTimeout, held)) {
      kv_logger()->warn(
          "{}: closed the connection from {}: no complete request within "
          "request_timeout={} ms{}",
          name_, session.peer(), options_.request_timeout.count(), held);
    }
    return std::nullopt;
  }
  if (is_parse_error(ec)) return bad_request(session, "malformed HTTP: " + ec.message(), "");
  return std::nullopt;  // the client went away, or close()
}

void KvServerCore::reply_timed_out(const KvSession& session, std::size_t sent, std::size_t total) {
  std::string held;
  if (may_warn(Limit::kRequestTimeout, held)) {
    kv_logger()->warn(
        "{}: closed the connection to {}: it read {} of the {} reply bytes within "
        "request_timeout={} ms{}",
        name_, session.peer(), sent, total, options_.request_timeout.count(), held);
  }
}

bool KvServerCore::may_warn(Limit limit, std::string& held) {
  std::uint64_t held_back = 0;
  if (!limits_.admit(limit, held_back)) return false;
  held.clear();
  if (held_back > 0) {
    held = " (" + std::to_string(held_back) + " more since the previous such line)";
  }
  return true;
}

}  // namespace hvdrun::launcher::horovod
