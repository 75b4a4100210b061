// Settings of libhvdrun, read once by init() from the HVDRUN_* environment (names in
// rendezvous/env_names.h and below): rendezvous address, secret, slot, hostname, start
// timeout, collective timeout, log level, network interface, backend, GPU pinning and fusion.
#pragma once

#include <spdlog/common.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "worker-runtime/nccl/backend_choice.h"
#include "worker-runtime/nccl/fusion_plan.h"

namespace hvdrun {

namespace env {
// Read by libhvdrun only (the launcher passes them through the environment).
// CUDA device for every local rank (default: local_rank % device count).
inline constexpr const char* kGpuDevice = "HVDRUN_GPU_DEVICE";
// 1: one GPU per local rank, an error when local ranks exceed devices.
inline constexpr const char* kGpuExclusive = "HVDRUN_GPU_EXCLUSIVE";
// Bytes up to which allreduce_many packs tensors into one collective in pack mode (default
// 64 MiB); 0 turns fusion off in both modes.
inline constexpr const char* kFusionThreshold = "HVDRUN_FUSION_THRESHOLD";
// allreduce_many strategy: group (default) or pack.
inline constexpr const char* kFusionMode = "HVDRUN_FUSION_MODE";
inline constexpr const char* kCheckCollectives = "HVDRUN_CHECK_COLLECTIVES";
}  // namespace env

struct Options {
  std::string rendezvous;  // "host:port"; empty: not started by hvdrun, a world of one
  std::string secret;
  std::uint32_t slot = 0;
  std::string hostname;                               // HVDRUN_HOSTNAME, else gethostname()
  std::chrono::milliseconds start_timeout{30000};     // HVDRUN_START_TIMEOUT (seconds)
  std::chrono::milliseconds timeout{60000};           // HVDRUN_TIMEOUT (seconds)
  bool elastic = false;                               // HVDRUN_ELASTIC
  bool spare = false;                                 // HVDRUN_SPARE
  std::chrono::milliseconds elastic_timeout{600000};  // HVDRUN_ELASTIC_TIMEOUT (seconds)
  spdlog::level::level_enum log_level = spdlog::level::warn;
  std::string network_interface;  // HVDRUN_NETWORK_INTERFACE (data_address.h); empty: default
  nccl::GpuRequest gpu;  // HVDRUN_BACKEND (cpu|nccl|auto), HVDRUN_GPU_DEVICE, HVDRUN_GPU_EXCLUSIVE
  std::size_t fusion_threshold = nccl::kDefaultFusionThreshold;  // HVDRUN_FUSION_THRESHOLD
  nccl::FusionMode fusion_mode = nccl::FusionMode::kGroup;       // HVDRUN_FUSION_MODE
  // HVDRUN_CHECK_COLLECTIVES: device calls compare their descriptor over the ring first.
  bool check_collectives = false;
  bool timeline_collectives = false;  // HVDRUN_TIMELINE_COLLECTIVES: time every collective
};

// Returns the value of an environment variable or nullptr.
using EnvLookup = std::function<const char*(const char*)>;

// Parses the settings; an unset or empty variable takes its default. A malformed value, or
// a rendezvous address without secret or slot, throws UsageError naming variable and value.
Options parse_options(const EnvLookup& lookup);
Options options_from_environment();

}  // namespace hvdrun
