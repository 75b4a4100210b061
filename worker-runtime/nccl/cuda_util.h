// CUDA runtime helpers of the NCCL backend: error text, visible devices, and move-only owners
// of device memory and events, plus a guard that makes a device current for one scope.
// Thread rules: owners are used by one thread at a time; a guard restores on its own thread.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace hvdrun::nccl {

// "cudaErrorNoDevice: no CUDA-capable device is detected".
std::string cuda_message(cudaError_t error);
// Throws BackendError("<what>: <cuda_message>") unless error == cudaSuccess.
void check_cuda(cudaError_t error, std::string_view what);

struct VisibleDevices {
  int count = 0;
  std::string error;  // why count is 0 (no driver, no device), empty otherwise
};
// cudaGetDeviceCount without throwing: no driver or no device gives count 0 and the reason.
VisibleDevices visible_devices() noexcept;

// cudaMalloc'd memory on the current device, freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Zero-filled. Throws BackendError naming `what` and the size.
  DeviceBuffer(std::size_t bytes, std::string_view what);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const noexcept { return data_; }
  std::size_t bytes() const noexcept { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// A cudaEvent_t without timing, for completion polling.
class CudaEvent {
 public:
  CudaEvent() = default;
  explicit CudaEvent(std::string_view what);  // creates it; throws BackendError
  ~CudaEvent();
  CudaEvent(CudaEvent&& other) noexcept;
  CudaEvent& operator=(CudaEvent&& other) noexcept;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  cudaEvent_t get() const noexcept { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// Makes `device` current for the calling thread until the end of the scope.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);  // throws BackendError
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
  bool changed_ = false;
};

}  // namespace hvdrun::nccl
