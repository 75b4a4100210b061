// CUDA helpers of the NCCL backend (see cuda_util.h).
#include "worker-runtime/nccl/cuda_util.h"

#include <utility>

#include "hvdrun/error.h"

namespace hvdrun::nccl {

std::string cuda_message(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + ": " + cudaGetErrorString(error);
}

void check_cuda(cudaError_t error, std::string_view what) {
  if (error != cudaSuccess) throw BackendError(std::string(what) + ": " + cuda_message(error));
}

VisibleDevices visible_devices() noexcept {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: clear it for the caller's own CUDA calls
    return {0, "cudaGetDeviceCount: " + cuda_message(error)};
  }
  return {count, count > 0 ? std::string() : "cudaGetDeviceCount: 0 devices"};
}

DeviceBuffer::DeviceBuffer(std::size_t bytes, std::string_view what) : bytes_(bytes) {
  if (bytes == 0) return;
  check_cuda(cudaMalloc(&data_, bytes),
             std::string(what) + ": cudaMalloc(" + std::to_string(bytes) + " bytes)");
  const cudaError_t error = cudaMemset(data_, 0, bytes);
  if (error != cudaSuccess) {
    cudaFree(data_);
    data_ = nullptr;
    check_cuda(error, std::string(what) + ": cudaMemset");
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (data_) cudaFree(data_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_) cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

CudaEvent::CudaEvent(std::string_view what) {
  check_cuda(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming),
             std::string(what) + ": cudaEventCreateWithFlags");
}

CudaEvent::~CudaEvent() {
  if (event_) cudaEventDestroy(event_);
}

CudaEvent::CudaEvent(CudaEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

CudaEvent& CudaEvent::operator=(CudaEvent&& other) noexcept {
  if (this != &other) {
    if (event_) cudaEventDestroy(event_);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

DeviceGuard::DeviceGuard(int device) {
  check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
  if (previous_ != device) {
    check_cuda(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
    changed_ = true;
  }
}

DeviceGuard::~DeviceGuard() {
  if (changed_) cudaSetDevice(previous_);
}

}  // namespace hvdrun::nccl
