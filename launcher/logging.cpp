// Launcher loggers "launcher", "rdzv" and "ssh" (pattern "[time] [hvdrun pid] [logger] [level]
// message") and the unprefixed user-facing lines (logging.h).
#include "launcher/logging.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "common/logger.h"

namespace hvdrun::launcher {

void setup_logging(const std::string& level) {
  auto parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off") parsed = spdlog::level::warn;
  for (const char* name : {"launcher", "rdzv", "ssh"}) {
    auto logger = named_logger(name);
    logger->set_pattern("[%H:%M:%S.%e] [hvdrun %P] [%n] [%l] %v");
    logger->set_level(parsed);
  }
}

std::shared_ptr<spdlog::logger> launcher_log() {
  return named_logger("launcher");
}

void note(const std::string& text) {
  std::string line = "hvdrun: " + text + "\n";
  std::size_t sent = 0;
  while (sent < line.size()) {
    ssize_t n = ::write(2, line.data() + sent, line.size() - sent);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    sent += static_cast<std::size_t>(n);
  }
}

std::string millis_since(std::chrono::steady_clock::time_point start) {
  auto elapsed = std::chrono::steady_clock::now() - start;
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count();
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms", static_cast<double>(us) / 1000.0);
  return text;
}

}  // namespace hvdrun::launcher
