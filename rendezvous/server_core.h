// The rendezvous server's state and message handling: accept loop, authentication, the
// generation, the key-value store and barriers. Server::Impl is this class.
// Thread: the io_context thread only (no locks). Lifetime: shared; sessions and timers hold
// it, so it outlives the Server object until they have unwound; after close() it calls no
// callback and touches no launcher state.
#pragma once

#include <spdlog/logger.h>

#include <array>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "common/log_rate.h"
#include "rendezvous/auth.h"
#include "rendezvous/barrier_set.h"
#include "rendezvous/generation.h"
#include "rendezvous/kv_store.h"
#include "rendezvous/memory_budget.h"
#include "rendezvous/protocol.h"
#include "rendezvous/server.h"

namespace hvdrun::rdzv {

class Session;

class ServerCore : public std::enable_shared_from_this<ServerCore> {
 public:
  // Validates the slots and binds; throws UsageError / NetworkError.
  ServerCore(boost::asio::io_context& io, ServerOptions options, ServerCallbacks callbacks);
  virtual ~ServerCore() = default;
  ServerCore(const ServerCore&) = delete;
  ServerCore& operator=(const ServerCore&) = delete;

  // Starts the accept loop (needs shared_from_this, so not in the constructor).
  void start();
  void close();

  std::uint16_t port() const noexcept { return port_; }
  std::size_t joined() const noexcept { return generation_.joined(); }
  std::uint32_t generation() const noexcept { return generation_.number(); }
  // See Server::progress.
  std::vector<MemberProgress> progress() const;
  // See Server::take_samples.
  std::vector<TimedCollective> take_samples();
  // See Server::start_generation.
  std::uint32_t start_generation(std::vector<Member> members, Handover how, std::string reason);
  // See Server::add_spare, dismiss_spare, parked_spares.
  void add_spare(std::uint32_t key);
  void dismiss_spare(std::uint32_t key, const std::string& why);
  std::size_t parked_spares() const noexcept { return parked_.size(); }
  // See Server::pending_gets.
  std::size_t pending_gets() const noexcept { return kv_.waiting(); }
  const ServerOptions& options() const noexcept { return options_; }
  // What the server holds for all its clients together (kv_limits_for()'s max_held_bytes).
  MemoryBudget& budget() noexcept { return budget_; }
  // The challenge for a new session.
  std::array<std::uint8_t, kNonceSize> next_nonce() { return nonces_.next(); }
  // The "rdzv" logger, looked up once (a lookup takes the registry's lock).
  spdlog::logger& log() const noexcept { return *log_; }

  // Called by sessions.
  void on_message(const std::shared_ptr<Session>& session, Message message);
  // A protocol violation: warn with the peer, answer kBadRequest, close that session.
  void refuse(Session& session, const std::string& why);
  // Logs that `peer`'s connection is being closed for `why`: at most one line a second, with
  // the count of those not shown (a flood of garbage connections must not flood the log).
  void log_refusal(const std::string& peer, const std::string& why);
  // The session is closing: cancel its waits, leave a forming generation.
  void session_gone(Session& session);
  // A session no longer waits to authenticate: it did, or its socket is closed (not merely
  // closing: until then it holds an open file).
  void challenge_ended();

 private:
  boost::asio::awaitable<void> accept_loop();
  // Waits until fewer than max_unauthenticated connections wait to authenticate, shedding the
  // oldest of them once it has waited shed_after; false once closed.
  boost::asio::awaitable<bool> wait_for_room();
  // The session accepted first of those still challenged, with its accept time (entries of
  // the others at the front of auth_due_ are dropped); null if none.
  std::shared_ptr<Session> oldest_challenged(std::chrono::steady_clock::time_point& accepted);
  boost::asio::awaitable<void> start_timer();
  boost::asio::awaitable<void> wait_timer(std::shared_ptr<Wait> wait);
  boost::asio::awaitable<void> heartbeat_loop();
  // Authentication deadlines: one timer for every session still challenged.
  void watch_authentication(std::uint64_t session_id);
  boost::asio::awaitable<void> authentication_deadlines();
  void check_heartbeats(std::chrono::steady_clock::time_point now);
  // The generation numbered `gen`: the current one, or the previous one while its members
  // have not all re-joined (Handover::kHostsUpdated); null for any other number.
  Generation* generation_numbered(std::uint32_t gen);

  void on_auth(Session& session, const Auth& auth);
  void on_join(const std::shared_ptr<Session>& session, std::uint32_t gen, const Join& join);
  // The Join enters generation `gen` (or is refused, closing the session).
  void admit(const std::shared_ptr<Session>& session, std::uint32_t gen, const Join& join);
  // A spare's Join is held; promote_spares() lets those the current generation has in.
  void park(const std::shared_ptr<Session>& session, const Join& join);
  void promote_spares();
  void on_kv_set(Session& session, std::uint32_t gen, KvSet set);
  void on_kv_get(const std::shared_ptr<Session>& session, std::uint32_t gen, const KvGet& get);
  void on_barrier(const std::shared_ptr<Session>& session, std::uint32_t gen, const Barrier& b);
  bool check_generation(Session& session, std::uint32_t gen, MsgType type);
  void complete_generation();
  void start_timed_out();
  void wait_expired(Wait& wait);
  void finish(Wait& wait);
  void add_wait(Session& session, const std::shared_ptr<Wait>& wait);

  boost::asio::io_context& io_;
  std::shared_ptr<spdlog::logger> log_;
  ServerOptions options_;
  MemoryBudget budget_;
  ServerCallbacks callbacks_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  bool closed_ = false;
  std::uint64_t next_session_id_ = 1;
  std::unordered_map<std::uint64_t, std::weak_ptr<Session>> sessions_;
  std::vector<TimedCollective> leftover_samples_;  // of members whose connection closed
  Generation generation_;
  std::optional<Generation> previous_;      // still in use after a kHostsUpdated handover
  std::chrono::milliseconds form_timeout_;  // of the generation forming
  boost::asio::steady_timer start_timer_;
  boost::asio::steady_timer heartbeat_timer_;
  // Sessions by accept time, each with the time its authentication is due (auth_timeout after
  // its accept, so in order); those authenticated or gone meanwhile are skipped when due.
  struct AuthDue {
    std::chrono::steady_clock::time_point at;
    std::uint64_t session_id;
  };
  std::deque<AuthDue> auth_due_;
  boost::asio::steady_timer auth_timer_;
  std::size_t unauthenticated_ = 0;  // sessions accepted and not (yet) authenticated
  bool accept_paused_ = false;       // the accept loop waits in wait_for_room()
  boost::asio::steady_timer room_;   // wakes it
  LogRate accept_pauses_;
  std::chrono::steady_clock::time_point first_join_{};
  KvStore kv_;
  std::set<std::uint32_t> spare_keys_;  // spares not promoted nor dismissed yet
  struct Parked {
    std::weak_ptr<Session> session;
    Join join;
  };
  std::map<std::uint32_t, Parked> parked_;  // spares' held Joins, by worker key
  // Spares dismissed before their Join came: why, for their Join (one entry per spare).
  std::map<std::uint32_t, std::string> dismissed_;
  NonceSource nonces_;
  LogRate refusals_;
  BarrierSet barriers_;
};

}  // namespace hvdrun::rdzv
