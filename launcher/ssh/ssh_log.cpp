// The "ssh" logger (ssh_log.h).
#include "launcher/ssh/ssh_log.h"

#include "common/logger.h"

namespace hvdrun::launcher::ssh {

std::shared_ptr<spdlog::logger> ssh_logger() {
  return named_logger("ssh");
}

}  // namespace hvdrun::launcher::ssh
