// Device-to-device copies of many buffers in one kernel launch: the pack and unpack steps of
// the fused allreduce. The segment table travels as a kernel parameter, so nothing on the
// host has to outlive the launch.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace hvdrun::nccl {

struct CopySegment {
  const void* src = nullptr;
  void* dst = nullptr;
  std::size_t bytes = 0;
};

// Segments per launch (the table stays under the 4 KiB kernel-parameter limit).
inline constexpr int kMaxCopySegments = 128;

// Enqueues the copies of segments[0, count) (count <= kMaxCopySegments) on `stream`, on the
// current device. Returns the launch status.
cudaError_t launch_batched_copy(const CopySegment* segments, int count,
                                cudaStream_t stream) noexcept;

}  // namespace hvdrun::nccl
