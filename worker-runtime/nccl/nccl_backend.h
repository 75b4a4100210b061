// The NCCL backend: device-memory collectives on the caller's stream over one NcclComm,
// each call waited for with a deadline (HVDRUN_TIMEOUT), and the fused allreduce (pack or
// group). Thread rules: one thread at a time (any thread: the device is made current per
// call). Lifetime: one generation, owned by the Communicator.
#pragma once

#include <chrono>
#include <span>

#include "worker-runtime/device_collectives.h"
#include "worker-runtime/nccl/batched_copy.h"
#include "worker-runtime/nccl/cuda_util.h"
#include "worker-runtime/nccl/fusion_plan.h"
#include "worker-runtime/nccl/nccl_comm.h"

namespace hvdrun::nccl {

struct BackendSettings {
  int device = 0;
  std::chrono::milliseconds timeout{60000};  // HVDRUN_TIMEOUT: bound of every collective
  std::size_t fusion_threshold = kDefaultFusionThreshold;
  FusionMode fusion_mode = FusionMode::kGroup;
};

class NcclBackend final : public DeviceCollectives {
 public:
  // `comm` must live on settings.device.
  NcclBackend(NcclComm comm, const BackendSettings& settings);

  int device() const noexcept override { return settings_.device; }
  void set_abort_signal(const AbortSignal* signal) noexcept override {
    comm_.set_abort_signal(signal);
  }
  ncclComm* native_comm() const noexcept override { return comm_.get(); }
  DeviceCommState comm_state() const noexcept override {
    return {comm_.rank(), comm_.size(), settings_.device, comm_.shrinkable(), comm_.has_shrink()};
  }
  void retire() noexcept override {
    comm_.set_abort_signal(nullptr);
    comm_.retire();
  }
  // For the next generation's shrink (nccl_setup.cpp).
  NcclComm& comm() noexcept { return comm_; }
  const BackendSettings& settings() const noexcept { return settings_; }
  void allreduce(const void* send, void* recv, std::size_t count, DataType dtype, ReduceOp op,
                 CUstream_st* stream) override;
  void broadcast(void* buffer, std::size_t count, DataType dtype, int root,
                 CUstream_st* stream) override;
  void allgather(const void* send, void* recv, std::size_t count, DataType dtype,
                 CUstream_st* stream) override;
  void reduce_scatter(const void* send, void* recv, std::size_t recv_count, DataType dtype,
                      ReduceOp op, CUstream_st* stream) override;
  void barrier(CUstream_st* stream) override;
  void allreduce_many(std::span<const DeviceTensor> tensors, ReduceOp op,
                      CUstream_st* stream) override;

 private:
  // Makes the device current, enqueues through `enqueue` (returns the NCCL result), records
  // the completion event on `stream` and waits for it until the deadline.
  template <class Enqueue>
  void run(const char* op, cudaStream_t stream, Enqueue&& enqueue);
  // Throws UsageError unless `ptr` is device, managed or mapped host memory of our device.
  void check_device_pointer(const char* op, const char* which, const void* ptr) const;
  ncclResult_t enqueue_packed(std::span<const DeviceTensor> tensors,
                              std::span<const TensorShape> shapes, ReduceOp op, cudaStream_t stream,
                              Clock::time_point deadline);
  ncclResult_t enqueue_grouped(std::span<const DeviceTensor> tensors, ReduceOp op,
                               cudaStream_t stream, Clock::time_point deadline);
  void copy(const CopySegment* segments, std::size_t count, cudaStream_t stream);
  void reserve_fusion_buffer(std::size_t bytes);

  NcclComm comm_;
  BackendSettings settings_;
  CudaEvent done_;
  DeviceBuffer scratch_;  // barrier's one element
  DeviceBuffer fusion_;   // grown on demand up to the threshold
};

template <class Enqueue>
inline void NcclBackend::run(const char* op, cudaStream_t stream, Enqueue&& enqueue) {
  DeviceGuard guard(settings_.device);
  comm_.check_usable(op);
  const auto deadline = Clock::now() + settings_.timeout;
  comm_.settle(enqueue(deadline), op, deadline);
  const cudaError_t recorded = cudaEventRecord(done_.get(), stream);
  if (recorded != cudaSuccess) comm_.fail(op, "cudaEventRecord: " + cuda_message(recorded));
  comm_.wait(done_.get(), op, deadline, settings_.timeout);
}

}  // namespace hvdrun::nccl
