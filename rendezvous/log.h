// The "rdzv" spdlog logger (common/logger.h).
#pragma once

#include <memory>

namespace spdlog {
class logger;
}

namespace hvdrun::rdzv {

std::shared_ptr<spdlog::logger> logger();

}  // namespace hvdrun::rdzv
