// named_logger (logger.h).
#include "common/logger.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace hvdrun {

std::shared_ptr<spdlog::logger> named_logger(const std::string& name) {
  if (auto existing = spdlog::get(name)) return existing;
  auto created =
      std::make_shared<spdlog::logger>(name, std::make_shared<spdlog::sinks::stderr_sink_mt>());
  created->set_level(spdlog::level::warn);
  created->flush_on(spdlog::level::trace);
  try {
    spdlog::register_logger(created);
  } catch (const spdlog::spdlog_ex&) {  // another thread registered it first
    if (auto existing = spdlog::get(name)) return existing;
  }
  return created;
}

}  // namespace hvdrun
