// NcclBackend's single collectives and the shared enqueue-and-wait path (see nccl_backend.h).
#include "worker-runtime/nccl/nccl_backend.h"

#include <cstdio>
#include <string>

#include "hvdrun/error.h"
#include "worker-runtime/nccl/nccl_types.h"

namespace hvdrun::nccl {
namespace {

void check_buffer(const char* op, const char* which, const void* ptr, std::size_t count) {
  if (ptr == nullptr && count > 0) {
    throw UsageError(std::string(op) + ": null " + which + " buffer for " + std::to_string(count) +
                     " elements");
  }
}

std::string address(const void* ptr) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", ptr);
  return text;
}

}  // namespace

NcclBackend::NcclBackend(NcclComm comm, const BackendSettings& settings)
    : comm_(std::move(comm)), settings_(settings) {
  DeviceGuard guard(settings_.device);
  done_ = CudaEvent("NCCL backend");
  scratch_ = DeviceBuffer(kFusionAlignment, "NCCL backend scratch");
}

void NcclBackend::check_device_pointer(const char* op, const char* which, const void* ptr) const {
  cudaPointerAttributes attributes{};
  const cudaError_t error = cudaPointerGetAttributes(&attributes, ptr);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    throw UsageError(std::string(op) + ": " + which + " buffer " + address(ptr) +
                     " is not CUDA memory (" + cuda_message(error) + ")");
  }
  if (attributes.type == cudaMemoryTypeUnregistered) {
    throw UsageError(std::string(op) + ": " + which + " buffer " + address(ptr) +
                     " is host memory; pass device memory, or use the overload without a stream "
                     "for host buffers");
  }
  if (attributes.type == cudaMemoryTypeDevice && attributes.device != settings_.device) {
    throw UsageError(std::string(op) + ": " + which + " buffer " + address(ptr) +
                     " is on CUDA device " + std::to_string(attributes.device) +
                     " but this rank runs on device " + std::to_string(settings_.device));
  }
}

void NcclBackend::allreduce(const void* send, void* recv, std::size_t count, DataType dtype,
                            ReduceOp op, CUstream_st* stream) {
  const ncclDataType_t type = to_nccl(dtype, "allreduce");
  const ncclRedOp_t reduce = to_nccl(op, "allreduce");
  check_buffer("allreduce", "send", send, count);
  check_buffer("allreduce", "recv", recv, count);
  if (count == 0) return;
  check_device_pointer("allreduce", "send", send);
  if (recv != send) check_device_pointer("allreduce", "recv", recv);
  run("allreduce", stream, [&](Clock::time_point) {
    return ncclAllReduce(send, recv, count, type, reduce, comm_.get(), stream);
  });
}

void NcclBackend::broadcast(void* buffer, std::size_t count, DataType dtype, int root,
                            CUstream_st* stream) {
  const ncclDataType_t type = to_nccl(dtype, "broadcast");
  check_buffer("broadcast", "", buffer, count);
  if (root < 0 || root >= comm_.size()) {
    throw UsageError("broadcast: root " + std::to_string(root) + " is not a rank of 0.." +
                     std::to_string(comm_.size() - 1));
  }
  if (count == 0) return;
  check_device_pointer("broadcast", "the", buffer);
  run("broadcast", stream, [&](Clock::time_point) {
    return ncclBroadcast(buffer, buffer, count, type, root, comm_.get(), stream);
  });
}

void NcclBackend::allgather(const void* send, void* recv, std::size_t count, DataType dtype,
                            CUstream_st* stream) {
  const ncclDataType_t type = to_nccl(dtype, "allgather");
  check_buffer("allgather", "send", send, count);
  check_buffer("allgather", "recv", recv, count);
  if (count == 0) return;
  check_device_pointer("allgather", "send", send);
  check_device_pointer("allgather", "recv", recv);
  run("allgather", stream, [&](Clock::time_point) {
    return ncclAllGather(send, recv, count, type, comm_.get(), stream);
  });
}

void NcclBackend::reduce_scatter(const void* send, void* recv, std::size_t recv_count,
                                 DataType dtype, ReduceOp op, CUstream_st* stream) {
  const ncclDataType_t type = to_nccl(dtype, "reduce_scatter");
  const ncclRedOp_t reduce = to_nccl(op, "reduce_scatter");
  check_buffer("reduce_scatter", "send", send, recv_count);
  check_buffer("reduce_scatter", "recv", recv, recv_count);
  if (recv_count == 0) return;
  check_device_pointer("reduce_scatter", "send", send);
  check_device_pointer("reduce_scatter", "recv", recv);
  run("reduce_scatter", stream, [&](Clock::time_point) {
    return ncclReduceScatter(send, recv, recv_count, type, reduce, comm_.get(), stream);
  });
}

void NcclBackend::barrier(CUstream_st* stream) {
  run("barrier", stream, [&](Clock::time_point) {
    return ncclAllReduce(scratch_.data(), scratch_.data(), 1, ncclInt32, ncclSum, comm_.get(),
                         stream);
  });
}

}  // namespace hvdrun::nccl
