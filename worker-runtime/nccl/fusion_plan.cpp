// plan_fusion() (see fusion_plan.h).
#include "worker-runtime/nccl/fusion_plan.h"

#include <algorithm>
#include <map>

namespace hvdrun::nccl {
namespace {

std::size_t align_up(std::size_t value) {
  return (value + kFusionAlignment - 1) / kFusionAlignment * kFusionAlignment;
}

// A packed bucket of one tensor gains nothing from the copy: make it direct.
void close_bucket(FusionBucket& bucket, std::vector<FusionBucket>& plan) {
  if (bucket.tensors.empty()) return;
  if (bucket.tensors.size() == 1) {
    bucket.offsets.clear();
    bucket.bytes = 0;
  }
  plan.push_back(std::move(bucket));
  bucket = FusionBucket{};
}

}  // namespace

std::string_view to_string(FusionMode mode) noexcept {
  return mode == FusionMode::kPack ? "pack" : "group";
}

std::vector<FusionBucket> plan_fusion(std::span<const TensorShape> tensors, std::size_t threshold) {
  std::vector<FusionBucket> plan;
  std::map<DataType, FusionBucket> open;  // one bucket being filled per data type
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const TensorShape& t = tensors[i];
    const std::size_t bytes = t.count * element_size(t.dtype);
    if (bytes == 0) continue;
    if (bytes > threshold) {  // threshold 0: every tensor
      FusionBucket direct;
      direct.dtype = t.dtype;
      direct.tensors.push_back(i);
      plan.push_back(std::move(direct));
      continue;
    }
    FusionBucket& bucket = open[t.dtype];
    std::size_t offset = align_up(bucket.bytes);
    if (!bucket.tensors.empty() && offset + bytes > threshold) {
      close_bucket(bucket, plan);
      offset = 0;
    }
    bucket.dtype = t.dtype;
    bucket.tensors.push_back(i);
    bucket.offsets.push_back(offset);
    bucket.bytes = offset + bytes;
  }
  for (auto& [dtype, bucket] : open) close_bucket(bucket, plan);
  std::stable_sort(plan.begin(), plan.end(), [](const FusionBucket& a, const FusionBucket& b) {
    return a.tensors.front() < b.tensors.front();
  });
  return plan;
}

std::size_t fusion_buffer_bytes(std::span<const FusionBucket> plan) noexcept {
  std::size_t most = 0;
  for (const FusionBucket& bucket : plan) most = std::max(most, bucket.bytes);
  return most;
}

}  // namespace hvdrun::nccl
