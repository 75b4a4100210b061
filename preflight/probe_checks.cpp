// The preflight probe's host checks (probe_checks.h).
#include "preflight/probe_checks.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>
#include <vector>

namespace hvdrun::preflight {
namespace {

// The few CUDA runtime calls used, looked up in whichever libcudart the host has.
class CudaRuntime {
 public:
  CudaRuntime() {
    for (const char* name : {"libcudart.so", "libcudart.so.13", "libcudart.so.12"}) {
      handle_ = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (handle_) break;
    }
    if (!handle_) return;
    count_ = reinterpret_cast<int (*)(int*)>(::dlsym(handle_, "cudaGetDeviceCount"));
    set_ = reinterpret_cast<int (*)(int)>(::dlsym(handle_, "cudaSetDevice"));
    free_ = reinterpret_cast<int (*)(void*)>(::dlsym(handle_, "cudaFree"));
    error_ = reinterpret_cast<const char* (*)(int)>(::dlsym(handle_, "cudaGetErrorString"));
    reset_ = reinterpret_cast<int (*)()>(::dlsym(handle_, "cudaDeviceReset"));
  }
  // The library stays loaded: unloading the CUDA runtime with contexts alive can crash at exit.
  ~CudaRuntime() = default;
  CudaRuntime(const CudaRuntime&) = delete;
  CudaRuntime& operator=(const CudaRuntime&) = delete;

  bool usable() const { return count_ && set_ && free_ && error_; }
  int device_count(int& n) const { return count_(&n); }
  // cudaSetDevice, then a cudaFree(nullptr) that creates the device's context, then
  // cudaDeviceReset: the context is not kept (in exclusive-process mode it would lock the GPU
  // out for the probe that checks its speed).
  int initialise(int device) const {
    int status = set_(device);
    if (status == 0) status = free_(nullptr);
    if (status == 0 && reset_) (void)reset_();
    return status;
  }
  std::string text(int status) const { return error_ ? error_(status) : std::to_string(status); }

 private:
  void* handle_ = nullptr;
  int (*count_)(int*) = nullptr;
  int (*set_)(int) = nullptr;
  int (*free_)(void*) = nullptr;
  const char* (*error_)(int) = nullptr;
  int (*reset_)() = nullptr;
};

}  // namespace

std::string find_program(const std::string& program, const std::string& path, std::string& why) {
  if (program.find('/') != std::string::npos) {
    if (::access(program.c_str(), X_OK) == 0) return program;
    why = program + " is not an executable file here";
    return {};
  }
  std::istringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  why = program + " is not on PATH here";
  return {};
}

GpuCheck check_gpus() {
  GpuCheck check;
  const CudaRuntime cuda;
  if (!cuda.usable()) {
    check.runtime = "no CUDA runtime";
    return check;
  }
  int n = 0;
  if (const int status = cuda.device_count(n); status != 0) {
    check.runtime = cuda.text(status);
    return check;
  }
  check.visible = n;
  for (int device = 0; device < n; ++device) {
    if (const int status = cuda.initialise(device); status != 0) {
      check.init_error = "device " + std::to_string(device) + ": " + cuda.text(status);
      break;
    }
  }
  return check;
}

int count_gpus() {
  const CudaRuntime cuda;
  int n = 0;
  return cuda.usable() && cuda.device_count(n) == 0 ? n : 0;
}

double gemm_gflops(int n, std::chrono::milliseconds budget) {
  const auto size = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  std::vector<float> a(size, 1.0f / static_cast<float>(n)), b(size, 0.5f), c(size);
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  double best = 0;  // the fastest product: what the core gives when the others let it
  do {
    const auto begin = Clock::now();
    std::fill(c.begin(), c.end(), 0.0f);
    for (int i = 0; i < n; ++i) {
      float* row = &c[static_cast<std::size_t>(i) * n];
      for (int k = 0; k < n; ++k) {
        const float x = a[static_cast<std::size_t>(i) * n + k];
        const float* other = &b[static_cast<std::size_t>(k) * n];
        for (int j = 0; j < n; ++j) row[j] += x * other[j];
      }
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - begin).count();
    if (seconds > 0) best = std::max(best, 2.0 * n * n * static_cast<double>(n) / seconds / 1e9);
  } while (Clock::now() - start < budget);
  volatile float sink = c[0];  // the products are used
  (void)sink;
  return best;
}

}  // namespace hvdrun::preflight
