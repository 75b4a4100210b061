// The "rdzv" spdlog logger, created at level warn if the application registered none.
#include "log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace hvdrun::rdzv {

std::shared_ptr<spdlog::logger> logger() {
  if (auto existing = spdlog::get("rdzv")) return existing;
  try {
    auto created = spdlog::stderr_color_mt("rdzv");
    created->set_level(spdlog::level::warn);
    return created;
  } catch (const spdlog::spdlog_ex&) {  // another thread registered it first
    return spdlog::get("rdzv");
  }
}

}  // namespace hvdrun::rdzv
