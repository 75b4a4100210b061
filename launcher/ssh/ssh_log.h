// The "ssh" spdlog logger. Host threads log through it concurrently, so its sink must be
// thread-safe: if the launcher registers "ssh" itself it must use an _mt sink; otherwise the
// first call creates one on stderr with the level of the "launcher" logger (warn without one).
#pragma once

#include <spdlog/logger.h>

#include <memory>

namespace hvdrun::launcher::ssh {

std::shared_ptr<spdlog::logger> ssh_logger();

}  // namespace hvdrun::launcher::ssh
