// --check-build (check_build.h). HVDRUN_BUILT_WITH_NCCL is the NCCL_VERSION_CODE libhvdrun was
// compiled against, 0 without the NCCL backend (set by launcher/CMakeLists.txt).
#include "launcher/cli/check_build.h"

#include <dlfcn.h>

#include <chrono>
#include <memory>

#include "launcher/cli/horovod_check.h"

namespace hvdrun::launcher {
namespace {

struct LibraryCloser {
  void operator()(void* handle) const { ::dlclose(handle); }
};
using Library = std::unique_ptr<void, LibraryCloser>;

Library open_library(const char* name) {
  return Library(::dlopen(name, RTLD_NOW | RTLD_LOCAL));
}

// 22809 -> "2.28.9" (NCCL >= 2.9 codes are major*10000 + minor*100 + patch).
std::string nccl_version_text(int code) {
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

std::string loaded_nccl() {
  const auto lib = open_library("libnccl.so.2");
  if (!lib) return "libnccl.so.2 not found";
  using GetVersion = int (*)(int*);
  const auto get_version = reinterpret_cast<GetVersion>(::dlsym(lib.get(), "ncclGetVersion"));
  int code = 0;
  if (get_version == nullptr || get_version(&code) != 0) return "libnccl.so.2 without a version";
  return "libnccl.so.2 " + nccl_version_text(code);
}

std::string visible_gpus() {
  const auto lib = open_library("libcuda.so.1");
  if (!lib) return "GPUs visible: 0 (no CUDA driver: libcuda.so.1 not found)";
  using Init = int (*)(unsigned);
  using Count = int (*)(int*);
  const auto init = reinterpret_cast<Init>(::dlsym(lib.get(), "cuInit"));
  const auto count = reinterpret_cast<Count>(::dlsym(lib.get(), "cuDeviceGetCount"));
  int devices = 0;
  if (init == nullptr || count == nullptr || init(0) != 0 || count(&devices) != 0) {
    return "GPUs visible: 0 (the CUDA driver found none)";
  }
  return "GPUs visible: " + std::to_string(devices);
}

// Importing a framework (TensorFlow, torch) can take seconds.
constexpr std::chrono::seconds kHorovodProbeTimeout{60};

}  // namespace

std::string check_build_text(const std::map<std::string, std::string>& environment) {
  constexpr int kBuiltWith = HVDRUN_BUILT_WITH_NCCL;
  std::string text = horovod_build_text(environment, kHorovodProbeTimeout);
  text += std::string("\nhvdrun v") + HVDRUN_VERSION +
          " runs the programs of the Horovod above, with Gloo as its controller (no MPI), and:\n";
  text += "    PyTorch programs (torch.distributed, init_method env://)\n";
  text += "    libhvdrun programs (C++): a TCP ring on CPUs; NCCL on GPUs: " +
          (kBuiltWith != 0 ? "built with NCCL " + nccl_version_text(kBuiltWith)
                           : std::string("built without NCCL")) +
          "; " + loaded_nccl() + "; " + visible_gpus() + "\n";
  return text;
}

}  // namespace hvdrun::launcher
