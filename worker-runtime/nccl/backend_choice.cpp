// choose_backend() (see backend_choice.h).
#include "worker-runtime/nccl/backend_choice.h"

#include <string>

#include "hvdrun/error.h"

namespace hvdrun::nccl {

std::string nccl_version_text(int code) {
  if (code <= 0) return "NCCL";
  // NCCL_VERSION_CODE: X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z from 2.9.
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? code / 100 % 100 : code / 100 % 10;
  return "NCCL " + std::to_string(major) + "." + std::to_string(minor) + "." +
         std::to_string(code % 100);
}

namespace {

// The CPU backend, or an error when the user insisted on NCCL.
BackendChoice cpu_because(const GpuRequest& request, const std::string& why) {
  if (request.backend == BackendRequest::kNccl) {
    throw BackendError("HVDRUN_BACKEND=nccl cannot be honoured: " + why);
  }
  return {BackendKind::kCpu, -1, "cpu (TCP ring): " + why};
}

}  // namespace

std::string_view to_string(BackendRequest request) noexcept {
  switch (request) {
    case BackendRequest::kAuto:
      return "auto";
    case BackendRequest::kCpu:
      return "cpu";
    case BackendRequest::kNccl:
      return "nccl";
  }
  return "?";
}

BackendChoice choose_backend(const GpuRequest& request, const DeviceFacts& facts, int local_rank,
                             int local_size) {
  if (request.backend == BackendRequest::kCpu) {
    return {BackendKind::kCpu, -1, "cpu (TCP ring): HVDRUN_BACKEND=cpu"};
  }
  if (!facts.built_with_nccl) {
    return cpu_because(request,
                       "this libhvdrun was built without NCCL (configure with "
                       "-DHVDRUN_WITH_NCCL=ON on a machine with CUDA and NCCL)");
  }
  if (facts.device_count <= 0) {
    return cpu_because(request, "no CUDA device is visible" +
                                    (facts.device_error.empty() ? std::string()
                                                                : " (" + facts.device_error + ")"));
  }
  const std::string devices =
      std::to_string(facts.device_count) + " CUDA device" + (facts.device_count == 1 ? "" : "s");
  const std::string ranks =
      std::to_string(local_size) + " local rank" + (local_size == 1 ? "" : "s");
  if (request.device && (*request.device < 0 || *request.device >= facts.device_count)) {
    throw UsageError("HVDRUN_GPU_DEVICE=" + std::to_string(*request.device) + " but only " +
                     devices + " visible (valid: 0.." + std::to_string(facts.device_count - 1) +
                     ")");
  }
  const int per_device =
      request.device ? local_size : (local_size + facts.device_count - 1) / facts.device_count;
  if (request.exclusive && per_device > 1) {
    throw BackendError("HVDRUN_GPU_EXCLUSIVE=1 but this host runs " + ranks + " for " + devices +
                       (request.device ? " (HVDRUN_GPU_DEVICE=" + std::to_string(*request.device) +
                                             " pins all of them to one device)"
                                       : "") +
                       "; start at most " +
                       std::to_string(request.device ? 1 : facts.device_count) +
                       " rank(s) per host");
  }
  if (per_device > 1 && !facts.shared_gpu_allowed) {
    return cpu_because(request, ranks + " would share " + devices + ", and " +
                                    nccl_version_text(facts.nccl_version) +
                                    " refuses several ranks on one GPU (NCCL >= 2.30 allows it "
                                    "with NCCL_MULTI_RANK_GPU_ENABLE=1)");
  }
  const int device = request.device ? *request.device : local_rank % facts.device_count;
  return {BackendKind::kNccl, device,
          "nccl: local rank " + std::to_string(local_rank) + " on CUDA device " +
              std::to_string(device) + " of " + std::to_string(facts.device_count) +
              (request.device ? " (HVDRUN_GPU_DEVICE)" : "")};
}

}  // namespace hvdrun::nccl
