// The launcher's own output: spdlog loggers "launcher", "rdzv" and "ssh" on stderr (level from
// --log-level / HVDRUN_LOG_LEVEL, JobSpec::log_level), and the unprefixed "hvdrun: ..." lines
// a user reads (failures, --verbose phases).
#pragma once

#include <spdlog/logger.h>

#include <chrono>
#include <memory>
#include <string>

namespace hvdrun::launcher {

// Sets level and pattern of the loggers (common/logger.h). An unknown level name means "warn".
void setup_logging(const std::string& level);
// The "launcher" logger.
std::shared_ptr<spdlog::logger> launcher_log();

// Writes "hvdrun: <text>\n" to stderr with one write loop (never torn by worker output,
// which the same thread writes).
void note(const std::string& text);

// "12.3 ms": the time since `start`, for --verbose phase lines.
std::string millis_since(std::chrono::steady_clock::time_point start);

}  // namespace hvdrun::launcher
