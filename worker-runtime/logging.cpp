// The "runtime" spdlog logger (see logging.h). The logger lives in spdlog's registry so that
// every translation unit of libhvdrun shares it.
#include "worker-runtime/logging.h"

#include <unistd.h>

#include <string>

#include "common/logger.h"

namespace hvdrun {
namespace {

constexpr const char* kName = "runtime";

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
  return *named_logger(kName);
}

void configure_runtime_log(spdlog::level::level_enum level, std::string_view host, int rank) {
  spdlog::logger& logger = runtime_log();
  logger.set_level(level);
  const std::string rank_text = rank < 0 ? "?" : std::to_string(rank);
  logger.set_pattern("[%H:%M:%S.%e] [" + escape_pattern(host) + " " + std::to_string(::getpid()) +
                     " rank " + rank_text + "] [%n] [%l] %v");
}

}  // namespace hvdrun
