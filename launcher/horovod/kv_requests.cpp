// KvServerCore's request handling (Horovod's KV protocol, reference §4): GET, PUT and DELETE
// on /<scope>/<key>, the elastic rank_and_size query, and bad requests. Every request is a
// few hash lookups; only a rank_and_size query waits (held for the next generation).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/beast/http/verb.hpp>
#include <set>

#include "common/duration_text.h"
#include "launcher/horovod/kv_server_core.h"

namespace hvdrun::launcher::horovod {
namespace http = boost::beast::http;
namespace {

// Horovod's elastic protocol (horovod/runner/elastic/rendezvous.py).
constexpr std::string_view kRankAndSizeScope = "rank_and_size";
constexpr std::string_view kWorkerAddressesScope = "worker_addresses";
// hvdrun's warm spares ask under "spare.<key>" (launcher/stacks/python_hook.cpp).
constexpr std::string_view kSparePrefix = "spare.";

bool is_spare(std::string_view name) {
  return name.starts_with(kSparePrefix);
}
// Longest request target quoted in a log line.
constexpr std::size_t kMaxQuoted = 200;

std::string quoted(std::string_view text) {
  if (text.size() <= kMaxQuoted) return std::string(text);
  return std::string(text.substr(0, kMaxQuoted)) + "...";
}

}  // namespace

std::optional<KvReply> KvServerCore::handle(KvRequest& request, KvSession& session) {
  ++requests_;
  const std::string_view target = request.target();
  const auto path = parse_kv_path(target);
  if (!path) return bad_request(session, "the path is not /<scope>/<key>", target);
  switch (request.method()) {
    case http::verb::get:
      if (path->scope == kRankAndSizeScope) return on_rank_and_size(path->key, session);
      return on_get(path->scope, path->key);
    case http::verb::put:
      return on_put(path->scope, path->key, std::move(request.body()), session);
    case http::verb::delete_:
      return on_delete(path->scope, path->key);
    default:
      return bad_request(
          session, "method " + std::string(request.method_string()) + " is not GET, PUT or DELETE",
          target);
  }
}

KvReply KvServerCore::on_get(std::string_view scope, std::string_view key) {
  // A missing key is answered at once: Horovod's workers poll every 10 ms.
  if (auto value = store_.get(scope, key)) return KvReply{http::status::ok, std::move(value)};
  return KvReply{http::status::not_found, nullptr};
}

KvReply KvServerCore::on_put(std::string_view scope, std::string_view key, std::string body,
                             const KvSession& session) {
  const std::size_t size = body.size();
  std::optional<WorkerRegistration> registration;
  if (scope == kWorkerAddressesScope && options_.on_registered) {
    std::string error;
    registration = read_worker_registration(body, error);
    std::string held;
    if (!registration && may_warn(Limit::kRegistration, held)) {
      kv_logger()->warn(
          "{}: worker {} ({}) registered a notification service that cannot be read ({}): it "
          "will not be told of host changes{}",
          name_, quoted(key), session.peer(), error, held);
    }
  }
  if (store_.put(scope, key, std::move(body)) == KvPutResult::kOverCap) {
    std::string held;
    if (may_warn(Limit::kStoredBytes, held)) {
      kv_logger()->warn(
          "{}: refused PUT /{}/{} of {} bytes from {}: stored keys and values would pass "
          "max_stored_bytes={} (now {} bytes in {} keys) (507){}",
          name_, quoted(scope), quoted(key), size, session.peer(), store_.max_stored_bytes(),
          store_.stored_bytes(), store_.stored_keys(), held);
    }
    return KvReply{http::status::insufficient_storage, nullptr};
  }
  if (scope == kWorkerAddressesScope) {
    // hvd.elastic.run registers: this worker will ask for its place at a re-formation.
    rank_queries_.registered(std::string(key));
    kv_logger()->debug("{}: worker {} registered its notification service", name_, quoted(key));
    if (registration) options_.on_registered(std::string(key), std::move(*registration));
  }
  if (!put_seen_) {
    put_seen_ = true;
    if (options_.on_first_put) options_.on_first_put(session.peer());
  }
  return KvReply{http::status::ok, nullptr};
}

KvReply KvServerCore::on_delete(std::string_view scope, std::string_view key) {
  if (store_.remove(scope, key) == KvDeleteResult::kScopeCleared) {
    kv_logger()->debug("{}: every member of scope {} finished; its keys are cleared", name_,
                       quoted(scope));
  }
  return KvReply{http::status::ok, nullptr};
}

// Only an elastic Horovod worker asks this: HOROVOD_ELASTIC=1 and hvd.init() after
// hvd.shutdown() (horovod/common/gloo/gloo_context.cc, GlooContext::Initialize). Its HTTPStore
// turns a 404 into an empty answer, which parses as rank 0 of size 0 and fails later inside
// gloo ("rank < size"); an error status is retried for 1.5 s and ends in "HTTP request
// failed.". The answer of horovodrun's elastic driver for a slot that is not in the job,
// "-1,-1,-1,-1,-1,-1" (hosts.py INVALID_SLOT_INFO), makes the worker throw
// "<host>[<local_rank>] has been removed from elastic job" at once: a static job answers that,
// and so does an elastic job for a worker the next generation leaves out.
std::optional<KvReply> KvServerCore::on_rank_and_size(std::string_view key, KvSession& session) {
  const std::string name(key);
  if (options_.rank_query_hold.count() == 0) {
    std::string held;
    if (may_warn(Limit::kElasticQuery, held)) {
      kv_logger()->warn(
          "{}: worker {} ({}) asked for its elastic rank and size (GET /rank_and_size/{}) in a "
          "static job; it was told it is not in the job and will fail with \"has been removed "
          "from elastic job\" (run an elastic job: --min-np or --max-np){}",
          name_, quoted(key), session.peer(), quoted(key), held);
    }
    return KvReply{http::status::ok, not_in_job_};
  }
  if (is_spare(name) && dismissed_spares_.contains(name)) {
    return KvReply{http::status::ok, not_in_job_};
  }
  if (is_spare(name)) {
    const bool first = !spares_seen_.contains(name);
    spares_seen_[name] = std::chrono::steady_clock::now();
    if (first && options_.on_spare_waiting) options_.on_spare_waiting(name);
  }
  // A worker asks again on a new connection when its first one broke (a broken connection
  // that waits is not noticed): the newest query of a name is the one answered.
  for (auto it = held_queries_.begin(); it != held_queries_.end();) {
    if (it->name != name) {
      ++it;
      continue;
    }
    if (const auto older = it->session.lock()) {
      kv_logger()->info("{}: worker {} asked again from {}; its query from {} is closed", name_,
                        quoted(key), session.peer(), older->peer());
      older->close();
    }
    it = held_queries_.erase(it);
  }
  held_queries_.push_back({name, session.weak_from_this()});
  if (rank_queries_.answers(name)) {
    auto due = rank_queries_.ask({name});  // this one's too, if it was the last awaited
    kv_logger()->debug("{}: worker {} ({}) asks for its place; {} more awaited", name_, quoted(key),
                       session.peer(), rank_queries_.awaited());
    deliver_answers(std::move(due));
  } else if (is_spare(name)) {
    kv_logger()->debug("{}: {} ({}) waits to be promoted", name_, quoted(key), session.peer());
  } else {
    kv_logger()->debug("{}: worker {} ({}) waits for the next generation", name_, quoted(key),
                       session.peer());
    std::set<std::string> waiting;
    for (const auto& query : held_queries_) {
      if (!rank_queries_.answers(query.name) && !is_spare(query.name)) waiting.insert(query.name);
    }
    if (rank_queries_.all_registered_among(waiting) && options_.on_reform_asked) {
      const bool reforms = options_.on_reform_asked(waiting.size());  // may reset() in it
      kv_logger()->info("{}: all {} registered workers wait for a re-formation{}", name_,
                        waiting.size(), reforms ? "" : "; the launcher waits for the others");
    }
  }
  return std::nullopt;
}

void KvServerCore::answer_held_queries() {
  auto held = std::move(held_queries_);
  held_queries_.clear();
  std::vector<std::string> asking;
  for (auto& query : held) {
    const auto session = query.session.lock();
    if (!session) continue;
    if (rank_queries_.answers(query.name)) {
      asking.push_back(query.name);
      held_queries_.push_back(std::move(query));
    } else if (is_spare(query.name)) {  // not promoted this time: it goes on waiting
      held_queries_.push_back(std::move(query));
    } else {
      kv_logger()->info(
          "{}: worker {} asked for its place, but the next generation leaves it out: it was "
          "told it is not in the job",
          name_, quoted(query.name));
      session->deliver(KvReply{http::status::ok, not_in_job_});
    }
  }
  deliver_answers(rank_queries_.ask(asking));  // in one release
}

void KvServerCore::dismiss_spare(const std::string& name) {
  dismissed_spares_.insert(name);
  spares_seen_.erase(name);
  for (auto it = held_queries_.begin(); it != held_queries_.end(); ++it) {
    if (it->name != name) continue;
    const auto session = it->session.lock();
    held_queries_.erase(it);
    if (session) session->deliver(KvReply{http::status::ok, not_in_job_});
    return;
  }
}

std::vector<std::string> KvServerCore::silent_spares(std::chrono::steady_clock::time_point now,
                                                     std::chrono::milliseconds limit) const {
  std::vector<std::string> silent;
  for (const auto& entry : spares_seen_) {  // (clang 14 cannot capture a structured binding)
    const std::string& name = entry.first;
    const bool held = std::any_of(held_queries_.begin(), held_queries_.end(), [&](const auto& q) {
      return q.name == name && !q.session.expired();
    });
    if (!held && now - entry.second > limit) silent.push_back(name);
  }
  return silent;
}

std::chrono::milliseconds KvServerCore::hold_of(const KvSession& session) const {
  if (options_.spare_query_hold.count() > 0) {
    for (const auto& query : held_queries_) {
      if (query.session.lock().get() == &session && is_spare(query.name)) {
        return options_.spare_query_hold;
      }
    }
  }
  return options_.rank_query_hold;
}

void KvServerCore::deliver_answers(std::vector<std::pair<std::string, std::string>> answers) {
  for (auto& answer : answers) {
    const std::string& name = answer.first;
    std::string& text = answer.second;
    const auto it = std::find_if(held_queries_.begin(), held_queries_.end(),
                                 [&name](const HeldQuery& q) { return q.name == name; });
    if (it == held_queries_.end()) continue;
    const auto session = it->session.lock();
    held_queries_.erase(it);
    spares_seen_.erase(name);  // promoted: a member now, under the members' watch
    if (!session) continue;
    kv_logger()->debug("{}: worker {} re-joins as {}", name_, quoted(name), text);
    session->deliver(
        KvReply{http::status::ok, std::make_shared<const std::string>(std::move(text))});
  }
}

std::optional<KvReply> KvServerCore::held_too_long(KvSession& session) {
  std::string name;
  for (auto it = held_queries_.begin(); it != held_queries_.end(); ++it) {
    if (it->session.lock().get() == &session) {
      // A spare in the generation being formed: its answer comes with the others'.
      if (is_spare(it->name) && rank_queries_.answers(it->name)) return std::nullopt;
      name = std::move(it->name);
      held_queries_.erase(it);
      break;
    }
  }
  if (is_spare(name)) {  // it asks again at once: that is its heartbeat
    spares_seen_[name] = std::chrono::steady_clock::now();
    return KvReply{http::status::service_unavailable, nullptr};
  }
  kv_logger()->warn(
      "{}: worker {} ({}) asked for its place in the next generation, but none came within {}; "
      "answered 503",
      name_, quoted(name), session.peer(), describe_duration(options_.rank_query_hold));
  return KvReply{http::status::service_unavailable, nullptr};
}

KvReply KvServerCore::bad_request(const KvSession& session, std::string_view why,
                                  std::string_view target) {
  std::string held;
  if (may_warn(Limit::kBadRequest, held)) {
    kv_logger()->warn("{}: bad request from {}: {}{}{}{} (400){}", name_, session.peer(), why,
                      target.empty() ? "" : " (target \"", quoted(target),
                      target.empty() ? "" : "\")", held);
  }
  return KvReply{http::status::bad_request, nullptr};
}

}  // namespace hvdrun::launcher::horovod
