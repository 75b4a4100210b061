// The "agents" logger (agents_log.h).
#include "launcher/remote/agents_log.h"

#include "common/logger.h"

namespace hvdrun::launcher::remote {

std::shared_ptr<spdlog::logger> agents_logger() {
  return named_logger("agents");
}

}  // namespace hvdrun::launcher::remote
