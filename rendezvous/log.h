// The "rdzv" spdlog logger: the one registered by the application, or a stderr logger at
// level warn created on first use.
#pragma once

#include <memory>

namespace spdlog {
class logger;
}

namespace hvdrun::rdzv {

std::shared_ptr<spdlog::logger> logger();

}  // namespace hvdrun::rdzv
