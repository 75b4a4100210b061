// --check-build: first what the installed Horovod was built with, in horovodrun's own lines
// (horovod_check.h: Horovod's answer, not hvdrun's), then what hvdrun adds: PyTorch programs,
// and libhvdrun with the NCCL it was built with, the libnccl.so.2 this machine loads and the
// GPUs visible (both probed with dlopen: the launcher links neither NCCL nor CUDA).
#pragma once

#include <map>
#include <string>

namespace hvdrun::launcher {

// `environment`: hvdrun's, for the python3 that is asked about Horovod.
std::string check_build_text(const std::map<std::string, std::string>& environment);

}  // namespace hvdrun::launcher
