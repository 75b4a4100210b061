// The "ssh" spdlog logger (common/logger.h). Host threads log through it concurrently, so a
// logger registered under "ssh" by someone else must have a thread-safe (_mt) sink.
#pragma once

#include <spdlog/logger.h>

#include <memory>

namespace hvdrun::launcher::ssh {

std::shared_ptr<spdlog::logger> ssh_logger();

}  // namespace hvdrun::launcher::ssh
