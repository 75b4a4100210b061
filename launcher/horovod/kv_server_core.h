// KvServerCore: the state behind KvServer: the listening socket and its accept loop (paused
// at max_connections), the open sessions, the scope store, request handling and the limit
// warnings. Requests are handled in kv_requests.cpp.
// Thread: the io_context thread only, no locks. Lifetime: shared; the accept loop and every
// session hold it, so it outlives KvServer until they have unwound. After close() it
// accepts nothing and every session is closed.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/horovod/kv_log.h"
#include "launcher/horovod/kv_scopes.h"
#include "launcher/horovod/kv_server.h"
#include "launcher/horovod/kv_session.h"
#include "launcher/horovod/rank_queries.h"

namespace hvdrun::launcher::horovod {

using KvRequest = boost::beast::http::request<boost::beast::http::string_body>;

class KvServerCore : public std::enable_shared_from_this<KvServerCore> {
 public:
  // Binds and listens; throws hvdrun::NetworkError.
  KvServerCore(boost::asio::io_context& io, KvServerOptions options, KvPlan plan);
  KvServerCore(const KvServerCore&) = delete;
  KvServerCore& operator=(const KvServerCore&) = delete;

  // Starts the accept loop (needs shared_from_this, so not in the constructor).
  void start();
  void close();
  void reset(KvPlan plan);
  // See KvServer::dismiss_spare and silent_spares.
  void dismiss_spare(const std::string& name);
  std::vector<std::string> silent_spares(std::chrono::steady_clock::time_point now,
                                         std::chrono::milliseconds limit) const;
  // How long the session's held query waits for its answer.
  std::chrono::milliseconds hold_of(const KvSession& session) const;

  std::uint16_t port() const noexcept { return port_; }
  const KvServerOptions& options() const noexcept { return options_; }
  KvServerStats stats() const;

  // Called by sessions. handle() answers a complete request (it may move the body out), or
  // holds it (nullopt): the answer then comes by KvSession::deliver().
  std::optional<KvReply> handle(KvRequest& request, KvSession& session);
  // A held request's session waited too long: the reply it sends, or none when it is to be
  // held again (a spare whose promotion is awaited: its answer is on the way).
  std::optional<KvReply> held_too_long(KvSession& session);
  // A request that could not be read: the error reply to send, or nullopt to just close.
  std::optional<KvReply> read_failed(const boost::system::error_code& ec, const KvSession& session);
  void reply_timed_out(const KvSession& session, std::size_t sent, std::size_t total);
  void session_failed(const KvSession& session, const std::exception_ptr& error);
  // The session's connection is closed: forget it and resume a paused accept loop.
  void session_ended(KvSession& session);

 private:
  boost::asio::awaitable<void> accept_loop();
  boost::asio::awaitable<bool> wait_for_room();
  void add_session(boost::asio::ip::tcp::socket socket);
  // KvServerOptions::admit's answer for a connection just accepted; a refused one is closed.
  bool admitted(boost::asio::ip::tcp::socket& socket);

  KvReply on_get(std::string_view scope, std::string_view key);
  KvReply on_put(std::string_view scope, std::string_view key, std::string body,
                 const KvSession& session);
  KvReply on_delete(std::string_view scope, std::string_view key);
  std::optional<KvReply> on_rank_and_size(std::string_view key, KvSession& session);
  // After a reset: each held rank_and_size query asks again (rank_queries.h), or is told "not
  // in the job".
  void answer_held_queries();
  // Sends each (name, answer) to the held query of that name.
  void deliver_answers(std::vector<std::pair<std::string, std::string>> answers);
  KvReply bad_request(const KvSession& session, std::string_view why, std::string_view target);
  // True when a warning about `limit` may be logged now; `held` then says how many similar
  // lines were held back (" (3 more since the previous such line)") or is empty.
  bool may_warn(Limit limit, std::string& held);
  // At close: one line counting the warnings that rate limiting held back.
  void log_held_back();

  boost::asio::io_context& io_;
  KvServerOptions options_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::ip::tcp::endpoint accepted_peer_;  // filled by each accept
  std::uint16_t port_ = 0;
  std::string name_;  // "Horovod rendezvous on 127.0.0.1:1234" for log lines
  bool closed_ = false;
  KvScopes store_;
  LimitLog limits_;
  std::vector<std::weak_ptr<KvSession>> sessions_;  // open ones; KvSession::slot indexes it
  boost::asio::steady_timer room_;                  // wakes a paused accept loop
  bool paused_ = false;
  std::size_t peak_connections_ = 0;
  std::uint64_t requests_ = 0;
  bool put_seen_ = false;  // options_.on_first_put was called
  KvValue not_in_job_;     // the rank_and_size answer
  RankQueries rank_queries_;
  struct HeldQuery {
    std::string name;  // "<host>:<local_rank>"
    std::weak_ptr<KvSession> session;
  };
  std::vector<HeldQuery> held_queries_;     // in arrival order
  std::set<std::string> dismissed_spares_;  // their query is answered "not in the job" at once
  // Spares waiting to be promoted: when each last asked, or last had its query held.
  std::map<std::string, std::chrono::steady_clock::time_point> spares_seen_;
};

}  // namespace hvdrun::launcher::horovod
