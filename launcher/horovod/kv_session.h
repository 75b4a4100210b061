// KvSession: one connection of the Horovod KV server. It reads one HTTP request (Beast
// parser with the header and body limits), hands it to KvServerCore, writes the reply with
// an exact-case Content-Length and closes. A beast::tcp_stream deadline bounds the request
// and the reply (request_timeout each); expiry closes the socket. A request the core holds
// (an elastic rank_and_size query) waits for deliver(), at most rank_query_hold.
// Thread: the server's io_context thread only. Lifetime: a coroutine holding
// shared_from_this until the connection is closed; it holds the core alive meanwhile.
#pragma once

#include <array>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "launcher/horovod/kv_scopes.h"

namespace hvdrun::launcher::horovod {

class KvServerCore;

// What a session sends back: the status and the body (nullptr: an empty body).
struct KvReply {
  boost::beast::http::status status = boost::beast::http::status::ok;
  KvValue body;
};

class KvSession : public std::enable_shared_from_this<KvSession> {
 public:
  KvSession(boost::asio::ip::tcp::socket socket, boost::asio::ip::tcp::endpoint peer,
            std::shared_ptr<KvServerCore> core);
  KvSession(const KvSession&) = delete;
  KvSession& operator=(const KvSession&) = delete;

  void start();
  // Closes the socket now; the coroutine then ends on its own.
  void close();
  // "ip:port" of the client, for log lines.
  std::string peer() const;
  // The reply to a held request.
  void deliver(KvReply reply);

  std::size_t slot = 0;  // position in the core's session list, kept by the core

 private:
  boost::asio::awaitable<void> run();
  boost::asio::awaitable<void> write_reply(const KvReply& reply);
  boost::asio::awaitable<void> drain();
  // The reply to a held request: delivered, or the core's when the hold is too long; nullopt
  // once the session is closed.
  boost::asio::awaitable<std::optional<KvReply>> held_reply();

  boost::beast::tcp_stream stream_;
  boost::asio::ip::tcp::endpoint peer_;
  boost::beast::flat_buffer buffer_;
  boost::beast::http::request_parser<boost::beast::http::string_body> parser_;
  std::shared_ptr<KvServerCore> core_;
  std::array<char, 128> head_{};    // status line and headers of the reply
  boost::asio::steady_timer hold_;  // a held request's wait: cancelled by deliver() and close()
  std::optional<KvReply> delivered_;
};

}  // namespace hvdrun::launcher::horovod
