// Logging of the Horovod KV server: the "launcher" spdlog logger, and LimitLog, which keeps
// repeated warnings about one limit (or one kind of bad request) to one line per second
// with a count of the lines it held back.
// Thread: the server's io_context thread only.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "common/log_rate.h"

namespace spdlog {
class logger;
}

namespace hvdrun::launcher::horovod {

// The "launcher" logger, or spdlog's default logger when none is registered.
std::shared_ptr<spdlog::logger> kv_logger();

// What a warning is about; each kind is rate-limited on its own.
enum class Limit : std::size_t {
  kBodyBytes,       // max_body_bytes
  kHeaderBytes,     // max_header_bytes
  kConnections,     // max_connections
  kStoredBytes,     // max_stored_bytes
  kRequestTimeout,  // request_timeout
  kBadRequest,      // malformed request, bad path or method
  kAcceptFailed,    // accept() error (e.g. out of file descriptors)
  kElasticQuery,    // elastic rank_and_size query in a static job
  kRegistration,    // a PUT /worker_addresses body that does not decode
  kRefusedPeer,     // a connection that KvServerOptions::admit refused
  kCount,
};

// "max_body_bytes", ..., "bad requests": what a summary line calls the limit.
std::string_view limit_name(Limit limit) noexcept;

class LimitLog {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kInterval{1};

  // Counts a hit of `limit`. Returns true when a line may be logged now; `held_back` is then
  // the number of hits not logged since the previous line.
  bool admit(Limit limit, std::uint64_t& held_back, Clock::time_point now = Clock::now());
  std::uint64_t hits(Limit limit) const noexcept { return rates_[index(limit)].hits(); }
  // Hits not logged since the last line about `limit`.
  std::uint64_t held_back(Limit limit) const noexcept { return rates_[index(limit)].held_back(); }

 private:
  static constexpr std::size_t index(Limit limit) noexcept {
    return static_cast<std::size_t>(limit);
  }
  std::array<LogRate, static_cast<std::size_t>(Limit::kCount)> rates_{};
};

}  // namespace hvdrun::launcher::horovod
