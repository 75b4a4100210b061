// Parsing of libhvdrun's HVDRUN_* environment into Options (see options.h).
#include "worker-runtime/options.h"

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "hvdrun/error.h"
#include "rendezvous/env_names.h"

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

nccl::BackendRequest parse_backend(const char* name, std::string_view text) {
  if (text == "auto") return nccl::BackendRequest::kAuto;
  if (text == "cpu") return nccl::BackendRequest::kCpu;
  if (text == "nccl") return nccl::BackendRequest::kNccl;
  throw UsageError(quoted(name, text) + " is not a backend (cpu, nccl, auto)");
}

bool parse_flag(const char* name, std::string_view text) {
  if (text == "1" || text == "true" || text == "yes" || text == "on") return true;
  if (text == "0" || text == "false" || text == "no" || text == "off") return false;
  throw UsageError(quoted(name, text) + " is not a boolean (1, 0, true, false, yes, no)");
}

int parse_device(const char* name, std::string_view text) {
  int device = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), device);
  if (ec != std::errc() || end != text.data() + text.size() || device < 0) {
    throw UsageError(quoted(name, text) + " is not a CUDA device index (0, 1, 2, ...)");
  }
  return device;
}

// Bytes, optionally with a binary suffix: 67108864, 65536K, 64M, 1G.
std::size_t parse_bytes(const char* name, std::string_view text) {
  std::size_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  const std::string_view suffix(end, static_cast<std::size_t>(text.data() + text.size() - end));
  int shift = -1;
  if (suffix.empty()) shift = 0;
  if (suffix == "K" || suffix == "k" || suffix == "KiB") shift = 10;
  if (suffix == "M" || suffix == "m" || suffix == "MiB") shift = 20;
  if (suffix == "G" || suffix == "g" || suffix == "GiB") shift = 30;
  if (ec != std::errc() || shift < 0 || value > (std::size_t{1} << 40) >> shift) {
    throw UsageError(quoted(name, text) +
                     " is not a byte count up to 1 TiB (e.g. 67108864, 64M, 0 to disable)");
  }
  return value << shift;
}

nccl::FusionMode parse_fusion_mode(const char* name, std::string_view text) {
  if (text == "pack") return nccl::FusionMode::kPack;
  if (text == "group") return nccl::FusionMode::kGroup;
  throw UsageError(quoted(name, text) + " is not a fusion mode (pack, group)");
}

// Backend, GPU and fusion settings; they apply with or without a rendezvous.
void parse_gpu_options(const std::function<std::string_view(const char*)>& get, Options& options) {
  if (auto v = get(env::kBackend); !v.empty())
    options.gpu.backend = parse_backend(env::kBackend, v);
  if (auto v = get(env::kGpuDevice); !v.empty())
    options.gpu.device = parse_device(env::kGpuDevice, v);
  if (auto v = get(env::kGpuExclusive); !v.empty()) {
    options.gpu.exclusive = parse_flag(env::kGpuExclusive, v);
  }
  if (auto v = get(env::kFusionThreshold); !v.empty()) {
    options.fusion_threshold = parse_bytes(env::kFusionThreshold, v);
  }
  if (auto v = get(env::kFusionMode); !v.empty()) {
    options.fusion_mode = parse_fusion_mode(env::kFusionMode, v);
  }
  if (auto v = get(env::kCheckCollectives); !v.empty()) {
    options.check_collectives = parse_flag(env::kCheckCollectives, v);
  }
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
  if (auto v = get(env::kElastic); !v.empty()) options.elastic = parse_flag(env::kElastic, v);
  if (auto v = get(env::kSpare); !v.empty()) options.spare = parse_flag(env::kSpare, v);
  if (auto v = get(env::kElasticTimeout); !v.empty()) {
    options.elastic_timeout = parse_seconds(env::kElasticTimeout, v);
  }
  if (auto v = get(env::kTimelineCollectives); !v.empty()) {
    options.timeline_collectives = parse_flag(env::kTimelineCollectives, v);
  }
  parse_gpu_options(get, options);
  const std::string_view host = get(env::kHostname);
  options.hostname = host.empty() ? local_hostname() : std::string(host);
  options.network_interface = std::string(get(env::kNetworkInterface));
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
