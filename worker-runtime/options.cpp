// Parsing of libhvdrun's HVDRUN_* environment into Options (see options.h).
#include "options.h"

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "env_names.h"
#include "hvdrun/error.h"

namespace hvdrun {
namespace {

std::string quoted(const char* name, std::string_view value) {
  return std::string(name) + "='" + std::string(value) + "'";
}

std::chrono::milliseconds parse_seconds(const char* name, std::string_view text) {
  double seconds = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(seconds) ||
      seconds <= 0 || seconds > 1e7) {
    throw UsageError(quoted(name, text) + " is not a number of seconds greater than 0");
  }
  return std::chrono::milliseconds(std::max<long long>(1, std::llround(seconds * 1000)));
}

std::uint32_t parse_slot(const char* name, std::string_view text) {
  std::uint32_t slot = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), slot);
  if (ec != std::errc() || end != text.data() + text.size()) {
    throw UsageError(quoted(name, text) + " is not a slot number (0, 1, 2, ...)");
  }
  return slot;
}

spdlog::level::level_enum parse_level(const char* name, std::string_view text) {
  static constexpr std::pair<std::string_view, spdlog::level::level_enum> kLevels[] = {
      {"trace", spdlog::level::trace},       {"debug", spdlog::level::debug},
      {"info", spdlog::level::info},         {"warn", spdlog::level::warn},
      {"warning", spdlog::level::warn},      {"error", spdlog::level::err},
      {"critical", spdlog::level::critical}, {"off", spdlog::level::off}};
  for (const auto& [word, level] : kLevels) {
    if (text == word) return level;
  }
  throw UsageError(quoted(name, text) +
                   " is not a log level (trace, debug, info, warn, error, critical, off)");
}

std::string local_hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

}  // namespace

Options parse_options(const EnvLookup& lookup) {
  const auto get = [&](const char* name) -> std::string_view {
    const char* value = lookup(name);
    return value ? std::string_view(value) : std::string_view();
  };
  Options options;
  if (auto v = get(env::kLogLevel); !v.empty()) options.log_level = parse_level(env::kLogLevel, v);
  if (auto v = get(env::kTimeout); !v.empty()) options.timeout = parse_seconds(env::kTimeout, v);
  if (auto v = get(env::kStartTimeout); !v.empty()) {
    options.start_timeout = parse_seconds(env::kStartTimeout, v);
  }
  const std::string_view host = get(env::kHostname);
  options.hostname = host.empty() ? local_hostname() : std::string(host);
  options.rendezvous = std::string(get(env::kRendezvousAddr));
  if (options.rendezvous.empty()) return options;

  options.secret = std::string(get(env::kSecret));
  if (options.secret.empty()) {
    throw UsageError(std::string(env::kSecret) + " is not set but " + env::kRendezvousAddr +
                     " is ('" + options.rendezvous + "'); both come from the hvdrun launcher");
  }
  const std::string_view slot = get(env::kSlot);
  if (slot.empty()) {
    throw UsageError(std::string(env::kSlot) + " is not set but " + env::kRendezvousAddr +
                     " is ('" + options.rendezvous + "'); both come from the hvdrun launcher");
  }
  options.slot = parse_slot(env::kSlot, slot);
  return options;
}

Options options_from_environment() {
  return parse_options([](const char* name) { return std::getenv(name); });
}

}  // namespace hvdrun
