// The preflight's GPU checks in a build without the NCCL backend (gpu_checks.h): none.
#include "preflight/gpu_checks.h"

namespace hvdrun::preflight {
namespace {

GpuFigure not_built() {
  return GpuFigure{std::nullopt, "hvdrun was built without NCCL"};
}

}  // namespace

bool gpu_checks_built() {
  return false;
}

std::optional<NcclId> new_nccl_id(std::string& why) {
  why = not_built().error;
  return std::nullopt;
}

std::string gpu_model(int) {
  return {};
}

GpuFigure gpu_gemm_tflops(int, std::chrono::milliseconds, std::chrono::milliseconds) {
  return not_built();
}

GpuFigure host_allreduce_gbps(int, const NcclId&, int, int, std::chrono::milliseconds) {
  return not_built();
}

}  // namespace hvdrun::preflight
