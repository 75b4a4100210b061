// Built only with NCCL: DataType/ReduceOp to NCCL enumerators, NCCL and CUDA error text, and the
// host probe (which must not fail on a machine without a GPU or driver).
#include "worker-runtime/nccl/nccl_types.h"

#include <gtest/gtest.h>

#include <string>

#include "hvdrun/error.h"
#include "worker-runtime/nccl/cuda_util.h"
#include "worker-runtime/nccl/nccl_setup.h"

namespace hvdrun::nccl {
namespace {

TEST(NcclTypes, EveryDataTypeMapsToItsNcclType) {
  EXPECT_EQ(to_nccl(DataType::kFloat32, "t"), ncclFloat32);
  EXPECT_EQ(to_nccl(DataType::kFloat64, "t"), ncclFloat64);
  EXPECT_EQ(to_nccl(DataType::kFloat16, "t"), ncclFloat16);
  EXPECT_EQ(to_nccl(DataType::kBFloat16, "t"), ncclBfloat16);
  EXPECT_EQ(to_nccl(DataType::kInt32, "t"), ncclInt32);
  EXPECT_EQ(to_nccl(DataType::kInt64, "t"), ncclInt64);
  EXPECT_EQ(to_nccl(DataType::kUInt8, "t"), ncclUint8);
}

TEST(NcclTypes, EveryReduceOpMapsToItsNcclOp) {
  EXPECT_EQ(to_nccl(ReduceOp::kSum, "t"), ncclSum);
  EXPECT_EQ(to_nccl(ReduceOp::kAverage, "t"), ncclAvg);
  EXPECT_EQ(to_nccl(ReduceOp::kMin, "t"), ncclMin);
  EXPECT_EQ(to_nccl(ReduceOp::kMax, "t"), ncclMax);
  EXPECT_EQ(to_nccl(ReduceOp::kProduct, "t"), ncclProd);
}

TEST(NcclTypes, UnknownValuesAreUsageErrorsNamingTheCall) {
  try {
    to_nccl(static_cast<DataType>(42), "allgather");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "allgather: unknown data type 42");
  }
  try {
    to_nccl(static_cast<ReduceOp>(9), "allreduce");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "allreduce: unknown reduce op 9");
  }
}

TEST(NcclTypes, ResultTextHasNameAndNcclString) {
  const std::string remote = result_text(ncclRemoteError);
  EXPECT_EQ(remote.rfind("ncclRemoteError (", 0), 0u) << remote;
  EXPECT_NE(remote.find(ncclGetErrorString(ncclRemoteError)), std::string::npos);
  EXPECT_EQ(result_text(ncclInProgress).rfind("ncclInProgress", 0), 0u);
}

TEST(CudaUtil, CheckCudaNamesTheCallAndTheError) {
  EXPECT_NO_THROW(check_cuda(cudaSuccess, "x"));
  try {
    check_cuda(cudaErrorInvalidValue, "cudaMemcpy(dst)");
    FAIL();
  } catch (const BackendError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("cudaMemcpy(dst): cudaErrorInvalidValue: ", 0), 0u)
        << e.what();
  }
}

TEST(NcclSetup, ProbeReportsTheBuildAndExplainsMissingDevices) {
  const DeviceFacts facts = probe_devices();
  EXPECT_TRUE(facts.built_with_nccl);
  EXPECT_GE(facts.nccl_version, 21400);
  EXPECT_GE(facts.device_count, 0);
  if (facts.device_count == 0) {
    EXPECT_FALSE(facts.device_error.empty());
  } else {
    EXPECT_TRUE(facts.device_error.empty());
  }
  EXPECT_EQ(facts.device_count, visible_devices().count);
}

}  // namespace
}  // namespace hvdrun::nccl
