// --check-build (check_build.h). HVDRUN_BUILT_WITH_NCCL is the NCCL_VERSION_CODE libhvdrun was
// compiled against, 0 without the NCCL backend (set by launcher/CMakeLists.txt).
#include "launcher/cli/check_build.h"

#include <dlfcn.h>

#include <memory>

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

std::string box(bool on) {
  return on ? "    [X] " : "    [ ] ";
}

}  // namespace

std::string check_build_text() {
  constexpr int kBuiltWith = HVDRUN_BUILT_WITH_NCCL;
  std::string text = std::string("hvdrun v") + HVDRUN_VERSION + ":\n\n";
  text += "Available Frameworks:\n";
  text += box(true) + "Horovod (TensorFlow, PyTorch, MXNet: as the Horovod installed was built)\n";
  text += box(true) + "PyTorch (torch.distributed, init_method env://)\n";
  text += box(true) + "libhvdrun (C++)\n\n";
  text += "Available Controllers:\n";
  text += box(false) + "MPI\n";
  text += box(true) + "Gloo\n\n";
  text += "Available Tensor Operations:\n";
  text += box(kBuiltWith != 0) + "NCCL (libhvdrun: " +
          (kBuiltWith != 0 ? "built with NCCL " + nccl_version_text(kBuiltWith)
                           : std::string("built without NCCL")) +
          "; " + loaded_nccl() + "; " + visible_gpus() + ")\n";
  text += box(false) + "DDL\n";
  text += box(false) + "CCL\n";
  text += box(false) + "MPI\n";
  text += box(true) + "Gloo (Horovod's CPU operations; libhvdrun: TCP ring)\n";
  return text;
}

}  // namespace hvdrun::launcher
