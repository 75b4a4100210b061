// Rendezvous admission: the accept loop, the bound on connections waiting to authenticate
// (past it, accepting pauses and the oldest waiting too long is shed), the authentication
// deadlines and the check of a client's Auth.
#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "common/use_tuple.h"
#include "rendezvous/auth.h"
#include "rendezvous/server_core.h"
#include "rendezvous/session.h"

namespace hvdrun::rdzv {
namespace asio = boost::asio;
namespace {

// How late an authentication deadline may be served: the deadlines due within it share one
// wake-up of the timer.
constexpr std::chrono::milliseconds kAuthDueSlack{20};

}  // namespace

asio::awaitable<void> ServerCore::accept_loop() {
  auto self = shared_from_this();
  asio::steady_timer backoff(io_);
  while (!closed_) {
    if (unauthenticated_ >= options_.max_unauthenticated && !co_await wait_for_room()) break;
    asio::ip::tcp::endpoint remote;  // filled by accept itself (no getpeername)
    auto [ec, socket] = co_await acceptor_.async_accept(remote, kUseTuple);
    if (closed_ || ec == asio::error::operation_aborted) break;
    if (ec) {  // e.g. out of file descriptors: recover after a pause
      log_->warn("accept on port {} failed: {}; retrying in 100 ms", port_, ec.message());
      backoff.expires_after(std::chrono::milliseconds(100));
      co_await backoff.async_wait(kUseTuple);
      continue;
    }
    auto session = std::make_shared<Session>(std::move(socket), remote, self, next_session_id_++);
    sessions_.emplace(session->id(), session);
    ++unauthenticated_;
    log_->trace("accepted {}", session->peer());
    session->start();
    watch_authentication(session->id());
  }
}

asio::awaitable<bool> ServerCore::wait_for_room() {
  if (std::uint64_t held = 0; accept_pauses_.admit(held)) {
    log_->warn(
        "rendezvous port {}: {} connections have not authenticated, the most that may wait; new "
        "connections wait in the listen backlog until one authenticates or is closed{}",
        port_, unauthenticated_,
        held == 0 ? "" : " (" + std::to_string(held) + " more such pauses not shown)");
  }
  accept_paused_ = true;
  while (!closed_ && unauthenticated_ >= options_.max_unauthenticated) {
    auto wake = asio::steady_timer::time_point::max();
    std::chrono::steady_clock::time_point accepted;
    if (auto oldest = oldest_challenged(accepted)) {
      const auto now = std::chrono::steady_clock::now();
      if (now - accepted >= options_.shed_after) {
        log_refusal(oldest->peer(), "did not authenticate while others waited to connect");
        oldest->fail(ErrorCode::kTimeout, "not authenticated within " +
                                              std::to_string(options_.shed_after.count()) +
                                              " ms while the server was full");
        continue;  // its close makes room; until then it is no longer the oldest challenged
      }
      wake = accepted + options_.shed_after;
    }
    room_.expires_at(wake);
    co_await room_.async_wait(kUseTuple);
  }
  accept_paused_ = false;
  co_return !closed_;
}

std::shared_ptr<Session> ServerCore::oldest_challenged(
    std::chrono::steady_clock::time_point& accepted) {
  for (; !auth_due_.empty(); auth_due_.pop_front()) {
    const auto it = sessions_.find(auth_due_.front().session_id);
    if (it == sessions_.end()) continue;
    auto session = it->second.lock();
    if (session && session->state() == Session::State::kChallenged) {
      accepted = auth_due_.front().at - options_.auth_timeout;
      return session;
    }
  }
  return nullptr;
}

void ServerCore::challenge_ended() {
  --unauthenticated_;
  if (accept_paused_) room_.cancel();
}

void ServerCore::watch_authentication(std::uint64_t session_id) {
  auth_due_.push_back({std::chrono::steady_clock::now() + options_.auth_timeout, session_id});
  if (auth_due_.size() == 1) auth_timer_.cancel();  // it waits for none: wake it for this one
}

asio::awaitable<void> ServerCore::authentication_deadlines() {
  auto self = shared_from_this();
  while (!closed_) {
    auth_timer_.expires_at(auth_due_.empty() ? asio::steady_timer::time_point::max()
                                             : auth_due_.front().at + kAuthDueSlack);
    co_await auth_timer_.async_wait(kUseTuple);
    const auto now = std::chrono::steady_clock::now();
    while (!closed_ && !auth_due_.empty() && auth_due_.front().at <= now) {
      const auto it = sessions_.find(auth_due_.front().session_id);
      auth_due_.pop_front();
      if (it == sessions_.end()) continue;
      auto session = it->second.lock();
      if (!session) continue;
      try {
        session->authentication_timed_out();
      } catch (const std::exception& e) {  // not expected; this loop serves every session
        log_->error("closing {}: {}", session->peer(), e.what());
        session->close();
      }
    }
  }
}

void ServerCore::on_auth(Session& session, const Auth& auth) {
  std::array<std::uint8_t, kMacSize> expected{};
  try {
    expected = compute_mac(options_.secret, kRendezvousAuthContext, session.nonce());
  } catch (const std::exception& e) {
    log_->error("cannot check authentication of {}: {}", session.peer(), e.what());
    return session.fail(ErrorCode::kAuthFailed, "authentication failed");
  }
  if (!mac_equal(expected, auth.mac)) {
    log_refusal(session.peer(), "authentication failed (wrong secret)");
    return session.fail(ErrorCode::kAuthFailed, "authentication failed");
  }
  session.authenticated();  // no answer: the client's first request follows right behind
  log_->debug("{} authenticated", session.peer());
}

}  // namespace hvdrun::rdzv
