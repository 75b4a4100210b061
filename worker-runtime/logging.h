// The "runtime" spdlog logger of libhvdrun. Level and pattern are set by init() from
// HVDRUN_LOG_LEVEL (default warn); the pattern names host, pid and rank.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string_view>

namespace hvdrun {

// The logger, created (stderr, level warn) and registered under "runtime" on first use.
spdlog::logger& runtime_log();

// Sets level and pattern "[time] [host pid rank N] [runtime] [level] message".
// rank < 0 prints "rank ?" (before the rendezvous answered).
void configure_runtime_log(spdlog::level::level_enum level, std::string_view host, int rank);

}  // namespace hvdrun
