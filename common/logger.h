// The one way hvdrun's components get a named spdlog logger ("launcher", "rdzv", "ssh", "agents",
// "runtime"): the logger registered under that name, or a new one on a thread-safe stderr
// sink at level warn, registered so that every later call and every thread shares it. The
// application (the launcher's setup_logging, libhvdrun's init) sets level and pattern.
#pragma once

#include <spdlog/logger.h>

#include <memory>
#include <string>

namespace hvdrun {

std::shared_ptr<spdlog::logger> named_logger(const std::string& name);

}  // namespace hvdrun
