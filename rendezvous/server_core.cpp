// Rendezvous server core: binding, generations and their handovers, heartbeats, dispatch of
// messages, close() and the cleanup when a session goes away. Admission (accepting and
// authenticating) is in server_admission.cpp, requests in server_requests.cpp.
#include "rendezvous/server_core.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <utility>

#include "common/duration_text.h"
#include "common/tcp_listen.h"
#include "common/use_tuple.h"
#include "hvdrun/error.h"
#include "rendezvous/log.h"
#include "rendezvous/session.h"

namespace hvdrun::rdzv {
namespace asio = boost::asio;
namespace {

void validate_slots(const std::vector<Slot>& slots) {
  if (slots.size() > kMaxPeers) {
    throw UsageError("rendezvous: " + std::to_string(slots.size()) + " slots exceed the limit of " +
                     std::to_string(kMaxPeers));
  }
  std::vector<bool> seen(slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const int rank = slots[i].rank;
    if (rank < 0 || static_cast<std::size_t>(rank) >= slots.size() || seen[rank]) {
      throw UsageError("rendezvous: slot " + std::to_string(i) + " has rank " +
                       std::to_string(rank) + ", not a unique rank in 0.." +
                       std::to_string(slots.size() - 1));
    }
    seen[rank] = true;
  }
}

asio::ip::tcp::acceptor listen_on(asio::io_context& io, const ServerOptions& o) {
  auto acceptor = listen_tcp(io, o.bind_address, o.port, "rendezvous");
  // Replies go out at once (no Nagle delay behind an unacknowledged one). Linux copies the
  // option to every accepted socket: one call here instead of one per connection.
  boost::system::error_code ignored;
  acceptor.set_option(asio::ip::tcp::no_delay(true), ignored);
  return acceptor;
}

// A held sample of `session`'s, with the member's worker key, rank, host and generation.
TimedCollective member_sample(TimedCollective sample, const Session& session, const Slot& slot) {
  sample.worker = session.slot.value_or(0);
  sample.rank = slot.rank;
  sample.host = slot.host;
  sample.generation = session.joined_generation;
  return sample;
}

}  // namespace

ServerCore::ServerCore(asio::io_context& io, ServerOptions options, ServerCallbacks callbacks)
    : io_(io),
      log_(logger()),
      options_(std::move(options)),
      budget_(kv_limits_for(options_).max_held_bytes),
      callbacks_(std::move(callbacks)),
      acceptor_((validate_slots(options_.slots), listen_on(io, options_))),
      generation_(members_of(options_.slots)),
      form_timeout_(options_.start_timeout),
      start_timer_(io),
      heartbeat_timer_(io),
      auth_timer_(io),
      room_(io) {
  if (options_.max_unauthenticated == 0) options_.max_unauthenticated = 1;
  port_ = acceptor_.local_endpoint().port();
  log_->debug("listening on {}:{} for {} slots", options_.bind_address, port_,
              options_.slots.size());
}

void ServerCore::start() {
  asio::co_spawn(io_, accept_loop(), asio::detached);
  asio::co_spawn(io_, authentication_deadlines(), asio::detached);
  if (options_.heartbeat_interval.count() > 0) {
    asio::co_spawn(io_, heartbeat_loop(), asio::detached);
  }
}

std::vector<MemberProgress> ServerCore::progress() const {
  std::vector<MemberProgress> out;
  if (generation_.phase() != Generation::Phase::kActive) return out;
  const auto now = std::chrono::steady_clock::now();
  const auto& slots = generation_.slots();
  for (std::size_t i = 0; i < slots.size(); ++i) {
    MemberProgress m;
    m.rank = slots[i].rank;
    m.host = slots[i].host;
    if (const auto session = generation_.session_at(i)) {
      m.worker = session->slot.value_or(0);
      m.pid = session->pid;
      if (session->progress && session->joined_generation == generation_.number()) {
        m.report = session->progress;
        m.age = std::chrono::duration_cast<std::chrono::milliseconds>(now - session->progress_at);
      }
    }
    out.push_back(std::move(m));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  return out;
}

std::vector<TimedCollective> ServerCore::take_samples() {
  std::vector<TimedCollective> out = std::exchange(leftover_samples_, {});
  if (generation_.phase() != Generation::Phase::kActive) return out;
  const auto& slots = generation_.slots();
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const auto session = generation_.session_at(i);
    if (!session || session->joined_generation != generation_.number()) continue;
    for (auto& sample : session->samples) {
      out.push_back(member_sample(std::move(sample), *session, slots[i]));
    }
    session->samples.clear();
  }
  return out;
}

std::uint32_t ServerCore::start_generation(std::vector<Member> members, Handover how,
                                           std::string reason) {
  Generation next(std::move(members), generation_.number() + 1);
  const std::uint32_t ended = generation_.number();
  if (how == Handover::kRestart) {
    const std::string text = "generation " + std::to_string(ended) + " ended: generation " +
                             std::to_string(next.number()) + " is forming" +
                             (reason.empty() ? "" : " (" + reason + ")");
    for (auto& s : generation_.fail(text)) s->fail(ErrorCode::kStaleGeneration, text);
  }
  previous_.reset();
  if (how == Handover::kHostsUpdated && generation_.phase() == Generation::Phase::kActive) {
    previous_.emplace(std::move(generation_));  // its members use it until they re-join
  }
  generation_ = std::move(next);
  start_timer_.cancel();
  first_join_ = {};
  form_timeout_ = how == Handover::kRestart || options_.reform_timeout.count() == 0
                      ? options_.start_timeout
                      : options_.reform_timeout;
  kv_.drop_before(previous_ ? previous_->number() : generation_.number());
  if (how != Handover::kRestart) {
    const GenerationEnd end{generation_.number(),
                            how == Handover::kBroken ? EndKind::kBroken : EndKind::kHostsUpdated,
                            reason.substr(0, kMaxString / 2)};
    std::vector<std::shared_ptr<Session>> workers;
    for (auto& [id, weak] : sessions_) {
      if (auto s = weak.lock(); s && s->slot && !s->parked && s->is_open()) {
        workers.push_back(std::move(s));
      }
    }
    for (auto& s : workers) {
      for (auto& wait : s->waits) {  // ended requests: the client drops them by generation
        if (!wait->done && !generation_numbered(wait->generation)) finish(*wait);
      }
      s->send(Message{ended, end});
    }
  }
  log_->debug("generation {} forming: {} slots", generation_.number(), generation_.size());
  std::erase_if(spare_keys_,
                [&](std::uint32_t key) { return generation_.position_of(key).has_value(); });
  // The spares it takes join after the caller is done with this generation's start (their
  // joins may complete it, which calls back into the launcher).
  if (!parked_.empty()) {
    asio::post(io_, [self = shared_from_this()] {
      if (!self->closed_) self->promote_spares();
    });
  }
  return generation_.number();
}

Generation* ServerCore::generation_numbered(std::uint32_t gen) {
  if (gen == generation_.number()) return &generation_;
  if (previous_ && gen == previous_->number()) return &*previous_;
  return nullptr;
}

asio::awaitable<void> ServerCore::heartbeat_loop() {
  auto self = shared_from_this();
  auto last_tick = std::chrono::steady_clock::now();
  while (!closed_) {
    heartbeat_timer_.expires_after(options_.heartbeat_interval);
    co_await heartbeat_timer_.async_wait(kUseTuple);
    if (closed_) break;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_tick > 2 * options_.heartbeat_interval + std::chrono::milliseconds(100)) {
      // This thread was held up: what was not heard meanwhile may simply not have been read.
      for (auto& [id, weak] : sessions_) {
        if (auto s = weak.lock()) s->last_heard = now;
      }
    } else {
      check_heartbeats(now);
    }
    last_tick = now;
  }
}

void ServerCore::check_heartbeats(std::chrono::steady_clock::time_point now) {
  std::vector<std::shared_ptr<Session>> workers;
  for (auto& [id, weak] : sessions_) {
    if (auto s = weak.lock(); s && s->slot && s->is_open()) workers.push_back(std::move(s));
  }
  for (auto& s : workers) {
    s->send(Message{generation_.number(), Heartbeat{}});
    const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - s->last_heard);
    if (options_.heartbeat_timeout.count() == 0 || s->lost_reported ||
        silent < options_.heartbeat_timeout) {
      continue;
    }
    s->lost_reported = true;
    const std::string why = "no heartbeat for " + std::to_string(silent.count()) + " ms (limit " +
                            describe_duration(options_.heartbeat_timeout) + ")";
    log_->info("worker {} (pid {}, {}): {}", *s->slot, s->pid, s->peer(), why);
    if (auto on_lost = callbacks_.on_worker_lost) on_lost(*s->slot, why);
    if (closed_) return;
  }
}

void ServerCore::close() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  start_timer_.cancel();
  heartbeat_timer_.cancel();
  auth_timer_.cancel();
  room_.cancel();
  std::vector<std::shared_ptr<Session>> open;
  for (auto& [id, weak] : sessions_) {
    if (auto s = weak.lock()) open.push_back(std::move(s));
  }
  for (auto& s : open) {
    const bool joining = s->slot && generation_.phase() == Generation::Phase::kForming;
    const bool waiting =
        std::any_of(s->waits.begin(), s->waits.end(), [](const auto& w) { return !w->done; });
    if (joining || waiting) {
      s->fail(ErrorCode::kJobFailed, "rendezvous closed");
    } else {
      s->close();
    }
  }
  callbacks_ = {};
  log_->debug("closed port {}", port_);
}

void ServerCore::on_message(const std::shared_ptr<Session>& session, Message message) {
  if (closed_ || !session->is_open()) return;
  const MsgType type = type_of(message.body);
  if (log_->should_log(spdlog::level::trace)) {
    log_->trace("<- {} {} gen {}", session->peer(), type_name(type), message.generation);
  }
  if (session->state() == Session::State::kChallenged) {
    if (auto* auth = std::get_if<Auth>(&message.body)) {
      on_auth(*session, *auth);
    } else {
      refuse(*session, "expected Auth, got " + type_name(type));
    }
    return;
  }
  switch (type) {
    case MsgType::kJoin:
      return on_join(session, message.generation, std::get<Join>(message.body));
    case MsgType::kKvSet:
      return on_kv_set(*session, message.generation, std::move(std::get<KvSet>(message.body)));
    case MsgType::kKvGet:
      return on_kv_get(session, message.generation, std::get<KvGet>(message.body));
    case MsgType::kBarrier:
      return on_barrier(session, message.generation, std::get<Barrier>(message.body));
    case MsgType::kHeartbeat:  // the read loop noted the time
      if (auto& progress = std::get<Heartbeat>(message.body).progress) {
        const auto now = std::chrono::steady_clock::now();
        for (const auto& sample : progress->samples) {
          TimedCollective timed;
          timed.sequence = sample.sequence;
          timed.inside_us = sample.inside_us;
          timed.what = sample.what;
          timed.entered = now - std::chrono::microseconds(sample.ago_us);
          session->samples.push_back(std::move(timed));
        }
        while (session->samples.size() > kMaxHeldSamples) session->samples.pop_front();
        progress->samples.clear();
        session->progress = std::move(progress);
        session->progress_at = std::chrono::steady_clock::now();
      }
      return;
    case MsgType::kError: {
      const auto& e = std::get<ErrorMsg>(message.body);
      log_->warn("{} reports error {}: {}", session->peer(), static_cast<int>(e.code), e.text);
      return session->close();
    }
    default:
      return refuse(*session, "unexpected " + type_name(type) + " from a client");
  }
}

void ServerCore::refuse(Session& session, const std::string& why) {
  log_refusal(session.peer(), why);
  session.fail(ErrorCode::kBadRequest, why);
}

void ServerCore::log_refusal(const std::string& peer, const std::string& why) {
  std::uint64_t held_back = 0;
  if (!refusals_.admit(held_back)) return;
  if (held_back == 0) {
    log_->warn("closing {}: {}", peer, why);
  } else {
    log_->warn("closing {}: {} ({} more refused connections not shown)", peer, why, held_back);
  }
}

void ServerCore::session_gone(Session& session) {
  sessions_.erase(session.id());
  if (session.parked && session.slot) {
    const auto it = parked_.find(*session.slot);
    if (it != parked_.end() && it->second.session.lock().get() == &session) parked_.erase(it);
  }
  // A member's timed collectives outlive its connection (its last heartbeat came at its end).
  if (session.slot && !session.samples.empty() &&
      session.joined_generation == generation_.number()) {
    if (const auto position = generation_.position_of(*session.slot)) {
      const Slot& slot = generation_.slots()[*position];
      for (auto& sample : session.samples) {
        if (leftover_samples_.size() >= kMaxHeldSamples * 4) break;
        leftover_samples_.push_back(member_sample(std::move(sample), session, slot));
      }
    }
    session.samples.clear();
  }
  for (auto& wait : session.waits) {
    if (!wait->done) finish(*wait);
  }
  session.waits.clear();
  if (session.slot && generation_.phase() == Generation::Phase::kForming &&
      generation_.has_member(*session.slot) && session.joined_generation == generation_.number()) {
    generation_.leave(*session.slot);
    log_->debug("slot {} (pid {}) left before generation {} was complete: {}/{} joined",
                *session.slot, session.pid, generation_.number(), generation_.joined(),
                generation_.size());
    if (generation_.joined() == 0) {  // the start timeout counts from the next first Join
      start_timer_.cancel();
      first_join_ = {};
    }
  }
}

void ServerCore::finish(Wait& wait) {
  wait.done = true;
  wait.timer.cancel();
  if (wait.kind == Wait::Kind::kGet) {
    kv_.remove_waiter(wait);
  } else {
    barriers_.remove(wait);
  }
}

}  // namespace hvdrun::rdzv
