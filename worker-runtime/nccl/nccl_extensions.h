// NCCL calls newer than the oldest NCCL libhvdrun runs with (2.14): ncclCommShrink (2.27) and
// ncclCommRevoke (2.28), looked up in the loaded libnccl at run time, so that an older NCCL
// still loads libhvdrun and the elastic paths fall back to ncclCommAbort and a new
// communicator.
#pragma once

#include <nccl.h>

namespace hvdrun::nccl {

struct NcclExtensions {
  using Shrink = ncclResult_t (*)(ncclComm_t comm, int* exclude, int exclude_count,
                                  ncclComm_t* newcomm, ncclConfig_t* config, int flags);
  using Revoke = ncclResult_t (*)(ncclComm_t comm, int flags);
  // ncclCommShrink's flags (NCCL_SHRINK_DEFAULT, NCCL_SHRINK_ABORT: end the parent's pending
  // operations first).
  static constexpr int kShrinkDefault = 0x00, kShrinkAbort = 0x01;
  Shrink shrink = nullptr;  // null: this NCCL has no ncclCommShrink
  Revoke revoke = nullptr;  // null: no ncclCommRevoke

  // The functions exported by the libnccl that this library's NCCL calls go to.
  static NcclExtensions find() noexcept;
};

}  // namespace hvdrun::nccl
