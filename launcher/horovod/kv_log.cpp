// The KV server's logger and the per-limit rate limiter (kv_log.h).
#include "launcher/horovod/kv_log.h"

#include <spdlog/spdlog.h>

#include "common/logger.h"

namespace hvdrun::launcher::horovod {

std::shared_ptr<spdlog::logger> kv_logger() {
  return named_logger("launcher");
}

std::string_view limit_name(Limit limit) noexcept {
  switch (limit) {
    case Limit::kBodyBytes:
      return "max_body_bytes";
    case Limit::kHeaderBytes:
      return "max_header_bytes";
    case Limit::kConnections:
      return "max_connections";
    case Limit::kStoredBytes:
      return "max_stored_bytes";
    case Limit::kRequestTimeout:
      return "request_timeout";
    case Limit::kBadRequest:
      return "bad requests";
    case Limit::kAcceptFailed:
      return "accept errors";
    case Limit::kRefusedPeer:
      return "refused connections";
    case Limit::kElasticQuery:
      return "elastic rank_and_size queries";
    case Limit::kRegistration:
      return "undecodable worker registrations";
    case Limit::kCount:
      break;
  }
  return "unknown";
}

bool LimitLog::admit(Limit limit, std::uint64_t& held_back, Clock::time_point now) {
  return rates_[index(limit)].admit(held_back, now);
}

}  // namespace hvdrun::launcher::horovod
