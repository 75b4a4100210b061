// KvServerCore's request handling (Horovod's KV protocol, reference §4): GET, PUT and DELETE
// on /<scope>/<key>, the elastic rank_and_size query of a static job, and bad requests.
// Every request is a few hash lookups; nothing here waits.
#include <spdlog/spdlog.h>

#include <boost/beast/http/verb.hpp>

#include "launcher/horovod/kv_server_core.h"

namespace hvdrun::launcher::horovod {
namespace http = boost::beast::http;
namespace {

// Horovod's elastic protocol (horovod/runner/elastic/rendezvous.py).
constexpr std::string_view kRankAndSizeScope = "rank_and_size";
constexpr std::string_view kWorkerAddressesScope = "worker_addresses";
// Longest request target quoted in a log line.
constexpr std::size_t kMaxQuoted = 200;

std::string quoted(std::string_view text) {
  if (text.size() <= kMaxQuoted) return std::string(text);
  return std::string(text.substr(0, kMaxQuoted)) + "...";
}

}  // namespace

KvReply KvServerCore::handle(KvRequest& request, const KvSession& session) {
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
    kv_logger()->debug(
        "{}: worker {} registered its notification service; stored as a plain key (hvdrun "
        "sends Horovod workers no host updates)",
        name_, quoted(key));
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
// "<host>[<local_rank>] has been removed from elastic job" at once, so this answers that.
KvReply KvServerCore::on_rank_and_size(std::string_view key, const KvSession& session) {
  std::string held;
  if (may_warn(Limit::kElasticQuery, held)) {
    kv_logger()->warn(
        "{}: worker {} ({}) asked for its elastic rank and size (GET /rank_and_size/{}): elastic "
        "Horovod (hvd.elastic.run) is not served yet; it was told it is not in the job and "
        "will fail with \"has been removed from elastic job\"{}",
        name_, quoted(key), session.peer(), quoted(key), held);
  }
  return KvReply{http::status::ok, not_in_job_};
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
