// The backend settings (HVDRUN_BACKEND, HVDRUN_GPU_*, HVDRUN_FUSION_*), the device-memory API
// without the NCCL backend, HVDRUN_BACKEND=nccl on a host without a GPU, and the ranks'
// agreement on the backend at init() with threads as ranks. Runs with or without a GPU.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <functional>
#include <map>
#include <string>

#include "hvdrun/hvdrun.h"
#include "rendezvous/env_names.h"
#include "tests/worker-runtime/options_from.h"
#include "tests/worker-runtime/ring_harness.h"
#include "tests/worker-runtime/server_thread.h"
#include "worker-runtime/job.h"
#include "worker-runtime/options.h"
#ifdef HVDRUN_HAVE_NCCL
#include "worker-runtime/nccl/cuda_util.h"
#endif

namespace hvdrun {
namespace {

int visible_gpus() {
#ifdef HVDRUN_HAVE_NCCL
  return nccl::visible_devices().count;
#else
  return 0;
#endif
}

std::string parse_error(const std::map<std::string, std::string>& vars) {
  try {
    test::options_from(vars);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(GpuOptions, Defaults) {
  const Options o = test::options_from({});
  EXPECT_EQ(o.gpu.backend, nccl::BackendRequest::kAuto);
  EXPECT_FALSE(o.gpu.device.has_value());
  EXPECT_FALSE(o.gpu.exclusive);
  EXPECT_EQ(o.fusion_threshold, std::size_t{64} << 20);
  EXPECT_EQ(o.fusion_mode, nccl::FusionMode::kGroup);
}

TEST(GpuOptions, Values) {
  Options o = test::options_from({{"HVDRUN_BACKEND", "cpu"},
                                  {"HVDRUN_GPU_DEVICE", "3"},
                                  {"HVDRUN_GPU_EXCLUSIVE", "1"},
                                  {"HVDRUN_FUSION_THRESHOLD", "0"},
                                  {"HVDRUN_FUSION_MODE", "pack"}});
  EXPECT_EQ(o.gpu.backend, nccl::BackendRequest::kCpu);
  EXPECT_EQ(o.gpu.device, 3);
  EXPECT_TRUE(o.gpu.exclusive);
  EXPECT_EQ(o.fusion_threshold, 0u);
  EXPECT_EQ(o.fusion_mode, nccl::FusionMode::kPack);
  EXPECT_EQ(test::options_from({{"HVDRUN_BACKEND", "nccl"}}).gpu.backend,
            nccl::BackendRequest::kNccl);
  EXPECT_EQ(test::options_from({{"HVDRUN_BACKEND", "auto"}}).gpu.backend,
            nccl::BackendRequest::kAuto);
  EXPECT_FALSE(test::options_from({{"HVDRUN_GPU_EXCLUSIVE", "no"}}).gpu.exclusive);
  EXPECT_EQ(test::options_from({{"HVDRUN_FUSION_THRESHOLD", "1048576"}}).fusion_threshold,
            1u << 20);
  EXPECT_EQ(test::options_from({{"HVDRUN_FUSION_THRESHOLD", "64K"}}).fusion_threshold, 64u << 10);
  EXPECT_EQ(test::options_from({{"HVDRUN_FUSION_THRESHOLD", "128M"}}).fusion_threshold, 128u << 20);
  EXPECT_EQ(test::options_from({{"HVDRUN_FUSION_THRESHOLD", "1GiB"}}).fusion_threshold, 1u << 30);
  EXPECT_EQ(test::options_from({{"HVDRUN_FUSION_MODE", "group"}}).fusion_mode,
            nccl::FusionMode::kGroup);
  EXPECT_FALSE(test::options_from({}).check_collectives);
  EXPECT_TRUE(test::options_from({{"HVDRUN_CHECK_COLLECTIVES", "1"}}).check_collectives);
  EXPECT_FALSE(test::options_from({{"HVDRUN_CHECK_COLLECTIVES", "0"}}).check_collectives);
}

TEST(GpuOptions, MalformedValuesNameVariableAndValue) {
  const std::map<std::string, std::string> bad[] = {
      {{"HVDRUN_BACKEND", "gpu"}},          {{"HVDRUN_BACKEND", "NCCL"}},
      {{"HVDRUN_GPU_DEVICE", "-1"}},        {{"HVDRUN_GPU_DEVICE", "cuda:0"}},
      {{"HVDRUN_GPU_EXCLUSIVE", "maybe"}},  {{"HVDRUN_FUSION_THRESHOLD", "-5"}},
      {{"HVDRUN_FUSION_THRESHOLD", "64X"}}, {{"HVDRUN_FUSION_THRESHOLD", "2048G"}},
      {{"HVDRUN_FUSION_MODE", "fast"}},     {{"HVDRUN_CHECK_COLLECTIVES", "sometimes"}}};
  for (const auto& vars : bad) {
    const auto& [name, value] = *vars.begin();
    EXPECT_NE(parse_error(vars).find(name + "='" + value + "'"), std::string::npos)
        << parse_error(vars);
  }
}

void clear_device_env() {
  for (const char* name : {env::kRendezvousAddr, env::kSecret, env::kSlot, env::kBackend,
                           env::kGpuDevice, env::kGpuExclusive}) {
    ::unsetenv(name);
  }
}

TEST(DeviceApi, BeforeInitIsAUsageError) {
  shutdown();
  EXPECT_FALSE(has_gpu_backend());
  EXPECT_EQ(gpu_device(), -1);
  float x = 0;
  EXPECT_THROW(allreduce(&x, &x, 1, DataType::kFloat32, ReduceOp::kSum, nullptr), UsageError);
  EXPECT_THROW(barrier(static_cast<CUstream_st*>(nullptr)), UsageError);
}

TEST(DeviceApi, CpuBackendRejectsDeviceCallsNamingTheReason) {
  clear_device_env();
  ::setenv(env::kBackend, "cpu", 1);
  InitGuard guard;
  EXPECT_FALSE(has_gpu_backend());
  EXPECT_EQ(gpu_device(), -1);
  float x = 1;
  try {
    allreduce(&x, &x, 1, DataType::kFloat32, ReduceOp::kSum, nullptr);
    FAIL() << "device allreduce ran without the NCCL backend";
  } catch (const BackendError& e) {
    EXPECT_NE(std::string(e.what()).find("needs the NCCL backend"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("HVDRUN_BACKEND=cpu"), std::string::npos) << e.what();
  }
  const DeviceTensor tensors[1] = {{&x, 1, DataType::kFloat32}};
  EXPECT_THROW(allreduce_many(tensors, ReduceOp::kSum, nullptr), BackendError);
  allreduce(&x, &x, 1, DataType::kFloat32, ReduceOp::kSum);  // the host API still works
  EXPECT_EQ(x, 1.0f);
  clear_device_env();
}

TEST(DeviceApi, NcclRequestWithoutAGpuFailsInit) {
  if (visible_gpus() > 0) GTEST_SKIP() << "a CUDA device is visible";
  clear_device_env();
  ::setenv(env::kBackend, "nccl", 1);
  try {
    init();
    FAIL() << "init() accepted HVDRUN_BACKEND=nccl without a GPU";
  } catch (const BackendError& e) {
    EXPECT_NE(std::string(e.what()).find("HVDRUN_BACKEND=nccl cannot be honoured"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(is_initialized());
  clear_device_env();
}

TEST(BackendAgreement, RanksShareOneHostWithoutEnoughGpusUseTheCpu) {
  constexpr int n = 2;
  if (visible_gpus() >= n) GTEST_SKIP() << "enough CUDA devices for NCCL";
  ServerThread server(n, std::chrono::seconds(10));
  const auto errors = test::run_ranks(n, [&](int slot) {
    Runtime job(test::job_options(server.port(), slot));
    EXPECT_EQ(job.communicator().device(), nullptr);
    EXPECT_NE(job.communicator().backend_reason().find("cpu (TCP ring)"), std::string::npos)
        << job.communicator().backend_reason();
  });
  for (const auto& e : errors) EXPECT_EQ(e, nullptr) << test::what(e);
}

// Whether each rank of a job of `n` checks its device calls (by rank), with
// HVDRUN_CHECK_COLLECTIVES=1 on the slots where set_on(slot).
std::vector<int> device_call_checks(int n, const std::function<bool(int)>& set_on) {
  ServerThread server(n, std::chrono::seconds(10));
  std::vector<int> checks(n, -1);
  const auto errors = test::run_ranks(n, [&](int slot) {
    Options options = test::job_options(server.port(), slot);
    options.check_collectives = set_on(slot);
    Runtime job(options);
    checks[job.communicator().topology().rank] = job.communicator().check_device_calls() ? 1 : 0;
  });
  for (const auto& e : errors) EXPECT_EQ(e, nullptr) << test::what(e);
  return checks;
}

// Set on one rank only: every rank checks its device calls (one that checked alone would wait
// for descriptors the others never send).
TEST(BackendAgreement, TheDeviceCallCheckSetOnOneRankHoldsForEveryRank) {
  EXPECT_EQ(device_call_checks(3, [](int slot) { return slot == 1; }), std::vector<int>(3, 1));
}

// Set nowhere, it stays off everywhere.
TEST(BackendAgreement, TheDeviceCallCheckSetNowhereIsOffForEveryRank) {
  EXPECT_EQ(device_call_checks(2, [](int) { return false; }), std::vector<int>(2, 0));
}

TEST(BackendAgreement, OneRanksFailedChoiceFailsEveryRank) {
  constexpr int n = 2;
  ServerThread server(n, std::chrono::seconds(10));
  const auto errors = test::run_ranks(n, [&](int slot) {
    Options options = test::job_options(server.port(), slot);
    if (slot == 0) {
      options.gpu.backend = nccl::BackendRequest::kNccl;
      options.gpu.device = 9999;  // no such device, or no device at all
    }
    Runtime job(options);
  });
  ASSERT_NE(errors[0], nullptr);
  ASSERT_NE(errors[1], nullptr);
  const std::string other = test::what(errors[1]);
  EXPECT_NE(other.find("backend choice failed on rank(s) 0"), std::string::npos) << other;
  try {
    std::rethrow_exception(errors[1]);
  } catch (const BackendError&) {
  } catch (...) {
    ADD_FAILURE() << "rank 1 failed with another kind: " << other;
  }
}

}  // namespace
}  // namespace hvdrun
