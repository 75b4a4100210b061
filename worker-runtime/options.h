// Settings of libhvdrun, read once by init() from the HVDRUN_* environment (names in
// rendezvous/env_names.h): rendezvous address, secret, slot, hostname, start timeout,
// collective timeout, log level.
#pragma once

#include <spdlog/common.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace hvdrun {

struct Options {
  std::string rendezvous;  // "host:port"; empty: not started by hvdrun, a world of one
  std::string secret;
  std::uint32_t slot = 0;
  std::string hostname;                            // HVDRUN_HOSTNAME, else gethostname()
  std::chrono::milliseconds start_timeout{30000};  // HVDRUN_START_TIMEOUT (seconds)
  std::chrono::milliseconds timeout{60000};        // HVDRUN_TIMEOUT (seconds)
  spdlog::level::level_enum log_level = spdlog::level::warn;
};

// Returns the value of an environment variable or nullptr.
using EnvLookup = std::function<const char*(const char*)>;

// Parses the settings; an unset or empty variable takes its default. A malformed value, or
// a rendezvous address without secret or slot, throws UsageError naming variable and value.
Options parse_options(const EnvLookup& lookup);
Options options_from_environment();

}  // namespace hvdrun
