// hvdrun's DataType and ReduceOp as NCCL enumerators (kAverage is ncclAvg, NCCL >= 2.10).
#pragma once

#include <nccl.h>

#include <string>

#include "hvdrun/types.h"

namespace hvdrun::nccl {

// Throw UsageError naming `what` for a value outside the enumeration.
ncclDataType_t to_nccl(DataType dtype, const char* what);
ncclRedOp_t to_nccl(ReduceOp op, const char* what);

// "ncclRemoteError (remote process exited or there was a network error)".
std::string result_text(ncclResult_t result);

}  // namespace hvdrun::nccl
