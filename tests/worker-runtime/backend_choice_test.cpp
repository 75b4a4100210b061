// choose_backend(): the backend and device for given device counts, requests and local ranks,
// without a GPU.
#include "worker-runtime/nccl/backend_choice.h"

#include <gtest/gtest.h>

#include <string>

#include "hvdrun/error.h"

namespace hvdrun::nccl {
namespace {

DeviceFacts gpus(int count) {
  DeviceFacts facts;
  facts.built_with_nccl = true;
  facts.device_count = count;
  facts.nccl_version = 22809;
  if (count == 0) facts.device_error = "cudaGetDeviceCount: cudaErrorNoDevice";
  return facts;
}

GpuRequest ask(BackendRequest backend, std::optional<int> device = {}, bool exclusive = false) {
  return {backend, device, exclusive};
}

template <class E>
std::string error_of(const GpuRequest& request, const DeviceFacts& facts, int local_rank,
                     int local_size) {
  try {
    choose_backend(request, facts, local_rank, local_size);
  } catch (const E& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(BackendChoice, AutoPicksNcclAndPinsLocalRankModuloDevices) {
  for (int local_rank = 0; local_rank < 8; ++local_rank) {
    const BackendChoice c = choose_backend(ask(BackendRequest::kAuto), gpus(8), local_rank, 8);
    EXPECT_EQ(c.kind, BackendKind::kNccl);
    EXPECT_EQ(c.device, local_rank);
  }
  const BackendChoice one = choose_backend(ask(BackendRequest::kNccl), gpus(1), 0, 1);
  EXPECT_EQ(one.kind, BackendKind::kNccl);
  EXPECT_EQ(one.device, 0);
  EXPECT_NE(one.reason.find("device 0 of 1"), std::string::npos) << one.reason;
}

TEST(BackendChoice, CpuRequestNeverUsesTheGpu) {
  const BackendChoice c = choose_backend(ask(BackendRequest::kCpu), gpus(8), 3, 8);
  EXPECT_EQ(c.kind, BackendKind::kCpu);
  EXPECT_EQ(c.device, -1);
  EXPECT_NE(c.reason.find("HVDRUN_BACKEND=cpu"), std::string::npos);
}

TEST(BackendChoice, AutoFallsBackToCpuWithTheReason) {
  DeviceFacts unbuilt = gpus(4);
  unbuilt.built_with_nccl = false;
  BackendChoice c = choose_backend(ask(BackendRequest::kAuto), unbuilt, 0, 1);
  EXPECT_EQ(c.kind, BackendKind::kCpu);
  EXPECT_NE(c.reason.find("built without NCCL"), std::string::npos) << c.reason;

  c = choose_backend(ask(BackendRequest::kAuto), gpus(0), 0, 1);
  EXPECT_EQ(c.kind, BackendKind::kCpu);
  EXPECT_NE(c.reason.find("no CUDA device"), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("cudaErrorNoDevice"), std::string::npos) << c.reason;

  // 4 local ranks on 1 GPU: NCCL 2.28 refuses two ranks on one device.
  c = choose_backend(ask(BackendRequest::kAuto), gpus(1), 2, 4);
  EXPECT_EQ(c.kind, BackendKind::kCpu);
  EXPECT_NE(c.reason.find("4 local ranks would share 1 CUDA device"), std::string::npos)
      << c.reason;
  EXPECT_NE(c.reason.find("NCCL 2.28.9"), std::string::npos) << c.reason;
}

TEST(BackendChoice, SharedGpusAllowedWhenNcclSupportsIt) {
  DeviceFacts facts = gpus(2);
  facts.shared_gpu_allowed = true;
  const BackendChoice c = choose_backend(ask(BackendRequest::kAuto), facts, 3, 4);
  EXPECT_EQ(c.kind, BackendKind::kNccl);
  EXPECT_EQ(c.device, 1);
}

TEST(BackendChoice, NcclRequestThatCannotBeHonouredIsABackendError) {
  DeviceFacts unbuilt = gpus(1);
  unbuilt.built_with_nccl = false;
  EXPECT_NE(
      error_of<BackendError>(ask(BackendRequest::kNccl), unbuilt, 0, 1).find("built without NCCL"),
      std::string::npos);
  const std::string none = error_of<BackendError>(ask(BackendRequest::kNccl), gpus(0), 0, 1);
  EXPECT_NE(none.find("HVDRUN_BACKEND=nccl"), std::string::npos) << none;
  EXPECT_NE(none.find("no CUDA device"), std::string::npos) << none;
  const std::string shared = error_of<BackendError>(ask(BackendRequest::kNccl), gpus(2), 0, 3);
  EXPECT_NE(shared.find("3 local ranks would share 2 CUDA devices"), std::string::npos) << shared;
}

TEST(BackendChoice, DeviceOverridePinsEveryLocalRank) {
  const BackendChoice c = choose_backend(ask(BackendRequest::kAuto, 2), gpus(4), 0, 1);
  EXPECT_EQ(c.kind, BackendKind::kNccl);
  EXPECT_EQ(c.device, 2);
  EXPECT_NE(c.reason.find("HVDRUN_GPU_DEVICE"), std::string::npos);
  // Two local ranks forced onto one device: not for NCCL 2.28.
  EXPECT_EQ(choose_backend(ask(BackendRequest::kAuto, 2), gpus(4), 1, 2).kind, BackendKind::kCpu);
  const std::string out_of_range =
      error_of<UsageError>(ask(BackendRequest::kAuto, 4), gpus(4), 0, 1);
  EXPECT_NE(out_of_range.find("HVDRUN_GPU_DEVICE=4 but only 4 CUDA devices"), std::string::npos)
      << out_of_range;
}

TEST(BackendChoice, ExclusiveGpusNameBothCounts) {
  const std::string e = error_of<BackendError>(ask(BackendRequest::kAuto, {}, true), gpus(2), 0, 3);
  EXPECT_NE(e.find("HVDRUN_GPU_EXCLUSIVE=1"), std::string::npos) << e;
  EXPECT_NE(e.find("3 local ranks for 2 CUDA devices"), std::string::npos) << e;
  // Exactly one rank per device is fine.
  EXPECT_EQ(choose_backend(ask(BackendRequest::kAuto, {}, true), gpus(2), 1, 2).device, 1);
  // Exclusive with the CPU backend requested: no GPU involved, no error.
  EXPECT_EQ(choose_backend(ask(BackendRequest::kCpu, {}, true), gpus(1), 0, 4).kind,
            BackendKind::kCpu);
}

}  // namespace
}  // namespace hvdrun::nccl
