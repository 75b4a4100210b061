// --check-build: what this hvdrun offers, in horovodrun's layout: the frameworks whose
// programs it runs, the controller (Gloo; no MPI), and the tensor operations with the NCCL
// libhvdrun was built with, the libnccl.so.2 this machine loads and the GPUs visible (both
// probed with dlopen: the launcher links neither NCCL nor CUDA).
#pragma once

#include <string>

namespace hvdrun::launcher {

std::string check_build_text();

}  // namespace hvdrun::launcher
