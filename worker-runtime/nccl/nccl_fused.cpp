// NcclBackend::allreduce_many: the plan of fusion_plan.h executed by packing (batched copy
// into the fusion buffer, one allreduce per bucket, batched copy back) or by grouping (one
// allreduce per tensor inside ncclGroupStart/End). Reads the fusion settings given at init.
#include <algorithm>
#include <string>
#include <vector>

#include "hvdrun/error.h"
#include "worker-runtime/nccl/batched_copy.h"
#include "worker-runtime/nccl/nccl_backend.h"
#include "worker-runtime/nccl/nccl_types.h"

namespace hvdrun::nccl {
namespace {

// Collectives per ncclGroupStart/End: keeps one group's bookkeeping bounded.
constexpr std::size_t kMaxGroupOps = 1024;

std::vector<TensorShape> shapes_of(std::span<const DeviceTensor> tensors) {
  std::vector<TensorShape> shapes;
  shapes.reserve(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const DeviceTensor& t = tensors[i];
    (void)to_nccl(t.dtype, "allreduce_many");
    if (t.data == nullptr && t.count > 0) {
      throw UsageError("allreduce_many: tensor " + std::to_string(i) + " has a null pointer for " +
                       std::to_string(t.count) + " elements");
    }
    shapes.push_back({t.count, t.dtype});
  }
  return shapes;
}

}  // namespace

void NcclBackend::reserve_fusion_buffer(std::size_t bytes) {
  if (fusion_.bytes() >= bytes) return;
  fusion_ = DeviceBuffer();  // free first: the old and new buffers need not fit together
  fusion_ = DeviceBuffer(bytes, "allreduce_many fusion buffer");
}

void NcclBackend::copy(const CopySegment* segments, std::size_t count, cudaStream_t stream) {
  for (std::size_t first = 0; first < count; first += kMaxCopySegments) {
    const auto n = static_cast<int>(std::min<std::size_t>(kMaxCopySegments, count - first));
    const cudaError_t error = launch_batched_copy(segments + first, n, stream);
    if (error != cudaSuccess) {
      comm_.fail("allreduce_many", "fusion-buffer copy kernel: " + cuda_message(error));
    }
  }
}

ncclResult_t NcclBackend::enqueue_packed(std::span<const DeviceTensor> tensors,
                                         std::span<const TensorShape> shapes, ReduceOp op,
                                         cudaStream_t stream, Clock::time_point deadline) {
  const std::vector<FusionBucket> plan = plan_fusion(shapes, settings_.fusion_threshold);
  reserve_fusion_buffer(fusion_buffer_bytes(plan));
  auto* buffer = static_cast<unsigned char*>(fusion_.data());
  const ncclRedOp_t reduce = to_nccl(op, "allreduce_many");
  std::vector<CopySegment> in, out;
  for (const FusionBucket& bucket : plan) {
    const ncclDataType_t type = to_nccl(bucket.dtype, "allreduce_many");
    if (!bucket.packed()) {
      const DeviceTensor& t = tensors[bucket.tensors.front()];
      comm_.settle(ncclAllReduce(t.data, t.data, t.count, type, reduce, comm_.get(), stream),
                   "allreduce_many", deadline);
      continue;
    }
    in.clear();
    out.clear();
    for (std::size_t k = 0; k < bucket.tensors.size(); ++k) {
      const DeviceTensor& t = tensors[bucket.tensors[k]];
      const std::size_t bytes = t.count * element_size(t.dtype);
      in.push_back({t.data, buffer + bucket.offsets[k], bytes});
      out.push_back({buffer + bucket.offsets[k], t.data, bytes});
    }
    copy(in.data(), in.size(), stream);
    comm_.settle(ncclAllReduce(buffer, buffer, bucket.bytes / element_size(bucket.dtype), type,
                               reduce, comm_.get(), stream),
                 "allreduce_many", deadline);
    copy(out.data(), out.size(), stream);
  }
  return ncclSuccess;
}

ncclResult_t NcclBackend::enqueue_grouped(std::span<const DeviceTensor> tensors, ReduceOp op,
                                          cudaStream_t stream, Clock::time_point deadline) {
  const ncclRedOp_t reduce = to_nccl(op, "allreduce_many");
  for (std::size_t first = 0; first < tensors.size(); first += kMaxGroupOps) {
    const std::size_t last = std::min(tensors.size(), first + kMaxGroupOps);
    ncclResult_t result = ncclGroupStart();
    for (std::size_t i = first; i < last && result == ncclSuccess; ++i) {
      const DeviceTensor& t = tensors[i];
      if (t.count == 0) continue;
      const ncclResult_t r = ncclAllReduce(
          t.data, t.data, t.count, to_nccl(t.dtype, "allreduce_many"), reduce, comm_.get(), stream);
      if (r != ncclSuccess && r != ncclInProgress) result = r;
    }
    const ncclResult_t end = ncclGroupEnd();  // always closes the group
    comm_.settle(result != ncclSuccess ? result : end, "allreduce_many", deadline);
  }
  return ncclSuccess;
}

void NcclBackend::allreduce_many(std::span<const DeviceTensor> tensors, ReduceOp op,
                                 CUstream_st* stream) {
  const std::vector<TensorShape> shapes = shapes_of(tensors);  // argument errors first
  (void)to_nccl(op, "allreduce_many");
  run("allreduce_many", stream, [&](Clock::time_point deadline) {
    if (settings_.fusion_mode == FusionMode::kGroup && settings_.fusion_threshold > 0) {
      return enqueue_grouped(tensors, op, stream, deadline);
    }
    // pack; with threshold 0 the plan holds one direct bucket per tensor
    return enqueue_packed(tensors, shapes, op, stream, deadline);
  });
}

}  // namespace hvdrun::nccl
