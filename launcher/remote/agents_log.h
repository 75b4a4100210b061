// The "agents" spdlog logger (common/logger.h): what the launcher says of its node agents,
// whatever started them (SSH, srun, the nodes themselves). Host threads log through it
// concurrently.
#pragma once

#include <spdlog/logger.h>

#include <memory>

namespace hvdrun::launcher::remote {

std::shared_ptr<spdlog::logger> agents_logger();

}  // namespace hvdrun::launcher::remote
