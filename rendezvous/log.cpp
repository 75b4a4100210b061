// The "rdzv" logger (log.h).
#include "rendezvous/log.h"

#include "common/logger.h"

namespace hvdrun::rdzv {

std::shared_ptr<spdlog::logger> logger() {
  return named_logger("rdzv");
}

}  // namespace hvdrun::rdzv
