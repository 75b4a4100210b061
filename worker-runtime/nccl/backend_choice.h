// Choice of the collective backend at init(), as a pure function of the request
// (HVDRUN_BACKEND, HVDRUN_GPU_DEVICE, HVDRUN_GPU_EXCLUSIVE) and the facts of the host
// (build, visible CUDA devices, local ranks), so that it is tested without a GPU.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hvdrun::nccl {

enum class BackendRequest { kAuto, kCpu, kNccl };
enum class BackendKind { kCpu, kNccl };

std::string_view to_string(BackendRequest request) noexcept;
// "NCCL 2.28.9" for an ncclGetVersion() code; "NCCL" for 0.
std::string nccl_version_text(int code);

struct GpuRequest {
  BackendRequest backend = BackendRequest::kAuto;
  std::optional<int> device;  // HVDRUN_GPU_DEVICE: pin every local rank to this device
  bool exclusive = false;     // HVDRUN_GPU_EXCLUSIVE: one GPU per local rank or an error
};

struct DeviceFacts {
  bool built_with_nccl = false;
  int device_count = 0;
  std::string device_error;         // why no device is visible (CUDA's message); may be empty
  bool shared_gpu_allowed = false;  // NCCL >= 2.30 with NCCL_MULTI_RANK_GPU_ENABLE=1
  int nccl_version = 0;             // ncclGetVersion(), for messages
  bool has_shrink = false;          // the loaded NCCL exports ncclCommShrink
};

struct BackendChoice {
  BackendKind kind = BackendKind::kCpu;
  int device = -1;     // CUDA device this process pins (kNccl only)
  std::string reason;  // one line for the log: why this backend and this device
};

// NCCL when built with it, a device is visible, HVDRUN_BACKEND is not cpu and no two local
// ranks land on one GPU (NCCL < 2.30 refuses that); the device is local_rank % device_count
// unless overridden. Throws BackendError when HVDRUN_BACKEND=nccl cannot be honoured, or when
// exclusive GPUs are asked for and local ranks exceed devices (naming both counts);
// UsageError for a device override outside [0, device_count).
BackendChoice choose_backend(const GpuRequest& request, const DeviceFacts& facts, int local_rank,
                             int local_size);

}  // namespace hvdrun::nccl
