// The "ssh" logger (ssh_log.h).
#include "ssh_log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace hvdrun::launcher::ssh {

std::shared_ptr<spdlog::logger> ssh_logger() {
  if (auto logger = spdlog::get("ssh")) return logger;
  auto logger =
      std::make_shared<spdlog::logger>("ssh", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_pattern("[%H:%M:%S.%e] [hvdrun %P] [%n] [%l] %v");
  const auto launcher = spdlog::get("launcher");
  logger->set_level(launcher ? launcher->level() : spdlog::level::warn);
  logger->flush_on(spdlog::level::trace);
  try {
    spdlog::register_logger(logger);
  } catch (const spdlog::spdlog_ex&) {
    if (auto existing = spdlog::get("ssh")) return existing;  // another thread was first
  }
  return logger;
}

}  // namespace hvdrun::launcher::ssh
