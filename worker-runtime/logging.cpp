// The "runtime" spdlog logger (see logging.h). The logger lives in spdlog's registry so that
// every translation unit of libhvdrun shares it.
#include "logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <unistd.h>

#include <string>

namespace hvdrun {
namespace {

constexpr const char* kName = "runtime";

std::shared_ptr<spdlog::logger> make_logger() {
  auto logger = spdlog::stderr_color_mt(kName);
  logger->set_level(spdlog::level::warn);
  return logger;
}

std::string escape_pattern(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '%') out += '%';
    out += c;
  }
  return out;
}

}  // namespace

spdlog::logger& runtime_log() {
  // The registry owns the logger; look it up each time so a spdlog::drop_all() by the
  // application cannot leave a dangling pointer here.
  if (auto logger = spdlog::get(kName)) return *logger;
  try {
    return *make_logger();
  } catch (const spdlog::spdlog_ex&) {  // created concurrently by another thread
    return *spdlog::get(kName);
  }
}

void configure_runtime_log(spdlog::level::level_enum level, std::string_view host, int rank) {
  spdlog::logger& logger = runtime_log();
  logger.set_level(level);
  const std::string rank_text = rank < 0 ? "?" : std::to_string(rank);
  logger.set_pattern("[%H:%M:%S.%e] [" + escape_pattern(host) + " " + std::to_string(::getpid()) +
                     " rank " + rank_text + "] [%n] [%l] %v");
}

}  // namespace hvdrun
