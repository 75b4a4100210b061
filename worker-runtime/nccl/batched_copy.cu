// launch_batched_copy() (see batched_copy.h): one block row (blockIdx.y) per segment, 16-byte
// loads when both ends are 16-byte aligned, byte loads otherwise.
#include <cstdint>

#include "worker-runtime/nccl/batched_copy.h"

namespace hvdrun::nccl {
namespace {

struct CopyBatch {
  CopySegment segments[kMaxCopySegments];
};

constexpr int kThreads = 256;
constexpr int kMaxBlocksPerSegment = 64;

__global__ void batched_copy_kernel(const CopyBatch batch) {
  const CopySegment s = batch.segments[blockIdx.y];
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const auto* src = static_cast<const unsigned char*>(s.src);
  auto* dst = static_cast<unsigned char*>(s.dst);
  std::size_t done = 0;
  if (((reinterpret_cast<std::uintptr_t>(src) | reinterpret_cast<std::uintptr_t>(dst)) & 15) == 0) {
    const std::size_t vectors = s.bytes / 16;
    const auto* src16 = reinterpret_cast<const uint4*>(src);
    auto* dst16 = reinterpret_cast<uint4*>(dst);
    for (std::size_t i = first; i < vectors; i += stride) dst16[i] = src16[i];
    done = vectors * 16;
  }
  for (std::size_t i = done + first; i < s.bytes; i += stride) dst[i] = src[i];
}

}  // namespace

cudaError_t launch_batched_copy(const CopySegment* segments, int count,
                                cudaStream_t stream) noexcept {
  if (count <= 0) return cudaSuccess;
  if (count > kMaxCopySegments) return cudaErrorInvalidValue;
  CopyBatch batch{};
  std::size_t largest = 0;
  for (int i = 0; i < count; ++i) {
    batch.segments[i] = segments[i];
    largest = segments[i].bytes > largest ? segments[i].bytes : largest;
  }
  const std::size_t per_block = std::size_t{kThreads} * 16 * 8;  // 8 vectors per thread
  std::size_t blocks = (largest + per_block - 1) / per_block;
  blocks = blocks < 1 ? 1 : (blocks > kMaxBlocksPerSegment ? kMaxBlocksPerSegment : blocks);
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(count));
  batched_copy_kernel<<<grid, kThreads, 0, stream>>>(batch);
  return cudaGetLastError();
}

}  // namespace hvdrun::nccl
