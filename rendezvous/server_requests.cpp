// Rendezvous requests of authenticated sessions: Join (and the generation's completion or
// start timeout), KvSet / KvGet with deadlines, and barriers.
#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "common/duration_text.h"
#include "common/use_tuple.h"
#include "rendezvous/log.h"
#include "rendezvous/server_core.h"
#include "rendezvous/session.h"

namespace hvdrun::rdzv {
namespace asio = boost::asio;
namespace {}  // namespace

bool ServerCore::check_generation(Session& session, std::uint32_t gen, MsgType type) {
  if (generation_numbered(gen)) return true;
  if (session.slot && gen < generation_.number()) {
    // A worker's request that crossed the GenerationEnd pushed to it: the push ends the
    // client's wait, and the connection serves the worker's next generation.
    log_->debug("{}: {} for ended generation {} dropped", session.peer(), type_name(type), gen);
    return false;
  }
  const std::string text = type_name(type) + " for generation " + std::to_string(gen) +
                           " refused: current generation is " +
                           std::to_string(generation_.number());
  log_->warn("closing {}: {}", session.peer(), text);
  session.fail(ErrorCode::kStaleGeneration, text);
  return false;
}

void ServerCore::on_join(const std::shared_ptr<Session>& session, std::uint32_t gen,
                         const Join& join) {
  // A Join for a generation that ended before the worker got in joins the one forming now,
  // if the worker is a member of it (the GenerationEnd pushed to it crossed its Join).
  if (gen < generation_.number() && generation_.position_of(join.slot) &&
      (!session->slot || *session->slot == join.slot)) {
    gen = generation_.number();
  }
  // The same Join again: the first crossed a GenerationEnd and was taken into this generation
  // already; the Assign answers both.
  if (session->slot && *session->slot == join.slot && gen == session->joined_generation &&
      generation_numbered(gen)) {
    return;
  }
  // A worker re-joins on its connection when a generation it was in has ended.
  if (session->slot && (*session->slot != join.slot || gen <= session->joined_generation)) {
    return refuse(*session, "second Join on one connection (already slot " +
                                std::to_string(*session->slot) + ")");
  }
  if (!generation_.position_of(join.slot)) {
    if (spare_keys_.contains(join.slot)) return park(session, join);
    if (const auto it = dismissed_.find(join.slot); it != dismissed_.end()) {
      log_->info("closing {}: spare {}: {}", session->peer(), join.slot, it->second);
      return session->fail(ErrorCode::kNotMember, it->second);
    }
  }
  admit(session, gen, join);
}

void ServerCore::admit(const std::shared_ptr<Session>& session, std::uint32_t gen,
                       const Join& join) {
  if (auto error = generation_.join(gen, join, session, session->peer_ip())) {
    // A worker the launcher left out (its slot was removed) is told so: no fault of anyone's.
    log_->log(error->code == ErrorCode::kNotMember ? spdlog::level::info : spdlog::level::warn,
              "closing {}: {}", session->peer(), error->text);
    return session->fail(error->code, std::move(error->text));
  }
  session->slot = join.slot;
  session->parked = false;
  session->joined_generation = gen;
  session->progress.reset();  // of the generation before, if any
  session->samples.clear();
  session->pid = join.pid;
  log_->debug("slot {} joined from {} (pid {}, host {}): {}/{}", join.slot, session->peer(),
              join.pid, join.host, generation_.joined(), generation_.size());
  if (generation_.joined() == 1 && first_join_ == std::chrono::steady_clock::time_point{}) {
    first_join_ = std::chrono::steady_clock::now();
    start_timer_.expires_after(form_timeout_);
    asio::co_spawn(io_, start_timer(), asio::detached);
  }
  if (generation_.complete()) complete_generation();
}

void ServerCore::park(const std::shared_ptr<Session>& session, const Join& join) {
  if (const auto it = parked_.find(join.slot); it != parked_.end()) {
    if (auto held = it->second.session.lock(); held && held->is_open()) {
      return session->fail(ErrorCode::kDuplicateSlot,
                           "spare " + std::to_string(join.slot) + " already waits (pid " +
                               std::to_string(it->second.join.pid) + "); refused pid " +
                               std::to_string(join.pid));
    }
  }
  session->slot = join.slot;
  session->parked = true;
  session->pid = join.pid;
  parked_[join.slot] = Parked{session, join};
  log_->debug("spare {} parked from {} (pid {}, host {})", join.slot, session->peer(), join.pid,
              join.host);
  if (auto on_parked = callbacks_.on_spare_parked) on_parked(join.slot);
}

void ServerCore::promote_spares() {
  std::vector<std::pair<std::shared_ptr<Session>, Join>> promoted;
  for (auto it = parked_.begin(); it != parked_.end();) {
    if (!generation_.position_of(it->first)) {
      ++it;
      continue;
    }
    if (auto session = it->second.session.lock(); session && session->is_open()) {
      promoted.emplace_back(std::move(session), it->second.join);
    }
    it = parked_.erase(it);
  }
  for (auto& [session, join] : promoted) {
    log_->debug("spare {} (pid {}) promoted into generation {}", join.slot, join.pid,
                generation_.number());
    admit(session, generation_.number(), join);
  }
}

void ServerCore::add_spare(std::uint32_t key) {
  spare_keys_.insert(key);
}

void ServerCore::dismiss_spare(std::uint32_t key, const std::string& why) {
  if (spare_keys_.erase(key) == 0) return;
  const auto it = parked_.find(key);
  if (it == parked_.end()) {
    dismissed_.insert_or_assign(key, why.substr(0, kMaxString / 2));
    return;
  }
  auto session = it->second.session.lock();
  parked_.erase(it);
  if (session && session->is_open()) session->fail(ErrorCode::kNotMember, why);
}

void ServerCore::complete_generation() {
  auto self = shared_from_this();  // a callback may destroy the Server
  start_timer_.cancel();
  try {
    generation_.activate(
        [](Session& s, std::vector<std::uint8_t> frame) { s.send_frame(std::move(frame)); });
  } catch (const std::exception& e) {  // an ASSIGN over the frame limit
    const std::string text = "cannot build the assignment: " + std::string(e.what());
    log_->error("{}", text);
    for (auto& s : generation_.fail(text)) s->fail(ErrorCode::kJobFailed, text);
    if (auto on_error = callbacks_.on_error) on_error({ErrorCode::kJobFailed, text});
    return;
  }
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - first_join_);
  if (previous_) {  // every member of the previous generation re-joined
    previous_.reset();
    kv_.drop_before(generation_.number());
  }
  log_->info("generation {} complete: {} ranks joined in {} ms", generation_.number(),
             generation_.size(), elapsed.count());
  if (auto on_complete = callbacks_.on_complete) on_complete();
}

asio::awaitable<void> ServerCore::start_timer() {
  auto self = shared_from_this();
  co_await start_timer_.async_wait(kUseTuple);
  if (closed_ || generation_.phase() != Generation::Phase::kForming) co_return;
  if (std::chrono::steady_clock::now() < start_timer_.expiry()) co_return;
  start_timed_out();
}

void ServerCore::start_timed_out() {
  const std::string text =
      "start timeout after " + describe_duration(form_timeout_) + ": " + generation_.join_status();
  if (callbacks_.on_error) {
    log_->info("{}", text);  // the owner reports it
  } else {
    log_->error("{}", text);
  }
  for (auto& s : generation_.fail(text)) s->fail(ErrorCode::kTimeout, text);
  if (auto on_error = callbacks_.on_error) on_error({ErrorCode::kTimeout, text});
}

void ServerCore::on_kv_set(Session& session, std::uint32_t gen, KvSet set) {
  if (!check_generation(session, gen, MsgType::kKvSet)) return;
  const KvLimits limits = kv_limits_for(options_);
  if (auto why = kv_.refuse_reason(gen, set.key, set.value, limits.max_bytes, limits.max_keys);
      !why.empty()) {
    why = "KvSet of '" + set.key + "' (" + std::to_string(set.value.size()) +
          " bytes) refused: " + why;
    log_->warn("closing {}: {}", session.peer(), why);
    return session.fail(ErrorCode::kBadRequest, why);
  }
  const std::string& value = set.value;
  auto woken = kv_.set(gen, set.key, value);
  for (auto& wait : woken) {
    if (wait->done) continue;
    wait->done = true;
    wait->timer.cancel();
    if (auto s = wait->session.lock()) s->send(Message{gen, KvValue{set.key, value}});
  }
  session.send(Message{gen, KvValue{std::move(set.key), ""}});
}

void ServerCore::on_kv_get(const std::shared_ptr<Session>& session, std::uint32_t gen,
                           const KvGet& get) {
  if (!check_generation(*session, gen, MsgType::kKvGet)) return;
  if (const std::string* value = kv_.find(gen, get.key)) {
    return session->send(Message{gen, KvValue{get.key, *value}});
  }
  auto wait = std::make_shared<Wait>(io_.get_executor(), Wait::Kind::kGet, gen, get.key,
                                     get.timeout_ms, session);
  kv_.add_waiter(wait);
  add_wait(*session, wait);
}

void ServerCore::on_barrier(const std::shared_ptr<Session>& session, std::uint32_t gen,
                            const Barrier& barrier) {
  if (!check_generation(*session, gen, MsgType::kBarrier)) return;
  if (!session->slot) return refuse(*session, "Barrier '" + barrier.name + "' before Join");
  const Generation& scope = *generation_numbered(gen);
  const auto position = scope.position_of(*session->slot);
  if (!position) {
    return refuse(*session, "Barrier '" + barrier.name + "' of generation " + std::to_string(gen) +
                                " from worker " + std::to_string(*session->slot) +
                                ", not a member of it");
  }
  auto wait = std::make_shared<Wait>(io_.get_executor(), Wait::Kind::kBarrier, gen, barrier.name,
                                     barrier.timeout_ms, session);
  auto entered = barriers_.enter(wait, static_cast<std::uint32_t>(*position), scope.size());
  if (entered.duplicate) {
    return refuse(*session, "slot " + std::to_string(*session->slot) + " entered barrier '" +
                                barrier.name + "' twice");
  }
  if (entered.released.empty()) {
    if (barrier.timeout_ms == 0) {
      session->waits.push_back(wait);  // no deadline: only cancellation
    } else {
      add_wait(*session, wait);
    }
    return;
  }
  log_->debug("barrier '{}' of generation {} complete", barrier.name, gen);
  for (auto& w : entered.released) {
    w->done = true;
    w->timer.cancel();
    if (auto s = w->session.lock()) s->send(Message{gen, BarrierDone{barrier.name}});
  }
}

void ServerCore::add_wait(Session& session, const std::shared_ptr<Wait>& wait) {
  std::erase_if(session.waits, [](const auto& w) { return w->done; });
  session.waits.push_back(wait);
  wait->timer.expires_after(std::chrono::milliseconds(wait->timeout_ms));
  asio::co_spawn(io_, wait_timer(wait), asio::detached);
}

asio::awaitable<void> ServerCore::wait_timer(std::shared_ptr<Wait> wait) {
  auto self = shared_from_this();
  co_await wait->timer.async_wait(kUseTuple);
  if (!wait->done && !closed_) wait_expired(*wait);
}

void ServerCore::wait_expired(Wait& wait) {
  std::string text;
  if (wait.kind == Wait::Kind::kGet) {
    text = "key '" + wait.key + "' not set within " + std::to_string(wait.timeout_ms) + " ms";
  } else {
    const Generation* scope = generation_numbered(wait.generation);
    const std::vector<Slot> none;
    const auto& slots = scope ? scope->slots() : none;
    const auto present = barriers_.entered(wait, slots.size());
    const auto n = static_cast<std::size_t>(std::count(present.begin(), present.end(), true));
    text = "barrier '" + wait.key + "' not complete within " + std::to_string(wait.timeout_ms) +
           " ms: " + std::to_string(n) + "/" + std::to_string(slots.size()) +
           " ranks entered; missing: " + describe_missing(slots, present);
  }
  finish(wait);
  auto session = wait.session.lock();
  if (!session) return;
  log_->warn("{}: {}", session->peer(), text);
  session->fail(ErrorCode::kTimeout, std::move(text));
}

}  // namespace hvdrun::rdzv
