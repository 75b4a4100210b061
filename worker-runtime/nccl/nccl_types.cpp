// DataType/ReduceOp to NCCL (see nccl_types.h).
#include "worker-runtime/nccl/nccl_types.h"

#include "hvdrun/error.h"

namespace hvdrun::nccl {

ncclDataType_t to_nccl(DataType dtype, const char* what) {
  switch (dtype) {
    case DataType::kFloat32:
      return ncclFloat32;
    case DataType::kFloat64:
      return ncclFloat64;
    case DataType::kFloat16:
      return ncclFloat16;
    case DataType::kBFloat16:
      return ncclBfloat16;
    case DataType::kInt32:
      return ncclInt32;
    case DataType::kInt64:
      return ncclInt64;
    case DataType::kUInt8:
      return ncclUint8;
  }
  throw UsageError(std::string(what) + ": unknown data type " +
                   std::to_string(static_cast<int>(dtype)));
}

ncclRedOp_t to_nccl(ReduceOp op, const char* what) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kAverage:
      return ncclAvg;
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kProduct:
      return ncclProd;
  }
  throw UsageError(std::string(what) + ": unknown reduce op " +
                   std::to_string(static_cast<int>(op)));
}

std::string result_text(ncclResult_t result) {
  static constexpr const char* kNames[] = {
      "ncclSuccess",         "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
      "ncclInvalidArgument", "ncclInvalidUsage",       "ncclRemoteError", "ncclInProgress"};
  const auto index = static_cast<std::size_t>(result);
  const std::string name =
      index < std::size(kNames) ? kNames[index] : "ncclResult " + std::to_string(index);
  return name + " (" + ncclGetErrorString(result) + ")";
}

}  // namespace hvdrun::nccl
