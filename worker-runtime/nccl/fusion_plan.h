// Plan of a fused allreduce (hvdrun::allreduce_many): which tensors share one collective and
// where each one sits in the fusion buffer. Pure host code, tested without a GPU.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "hvdrun/types.h"

namespace hvdrun::nccl {

// How allreduce_many fuses (HVDRUN_FUSION_MODE): copy small tensors into one buffer and run
// one collective on it, or issue one collective per tensor inside ncclGroupStart/End.
enum class FusionMode { kPack, kGroup };
std::string_view to_string(FusionMode mode) noexcept;

// Default HVDRUN_FUSION_THRESHOLD: 64 MiB.
inline constexpr std::size_t kDefaultFusionThreshold = std::size_t{64} << 20;
// Byte alignment of each tensor inside the fusion buffer.
inline constexpr std::size_t kFusionAlignment = 256;

struct TensorShape {
  std::size_t count = 0;
  DataType dtype = DataType::kFloat32;
};

// One collective of the plan. A packed bucket copies its tensors to `offsets` in the fusion
// buffer, reduces `bytes` bytes there (gaps included), and copies them back. A direct bucket
// (bytes == 0) holds one tensor reduced in place.
struct FusionBucket {
  DataType dtype = DataType::kFloat32;
  std::vector<std::size_t> tensors;  // indices into the call's list, in call order
  std::vector<std::size_t> offsets;  // byte offsets in the fusion buffer (packed only)
  std::size_t bytes = 0;             // fusion-buffer bytes reduced (packed only)

  bool packed() const noexcept { return bytes > 0; }
};

// Buckets in the order of their first tensor. Tensors of one data type are packed in call
// order while the aligned end stays within `threshold` bytes; a tensor larger than the
// threshold, a bucket that would hold one tensor, and every tensor when threshold == 0 are
// direct. Empty tensors are left out. Deterministic: every rank computes the same plan.
std::vector<FusionBucket> plan_fusion(std::span<const TensorShape> tensors, std::size_t threshold);

// Largest `bytes` of the plan's packed buckets: the fusion buffer it needs.
std::size_t fusion_buffer_bytes(std::span<const FusionBucket> plan) noexcept;

}  // namespace hvdrun::nccl
