// train_on_gpu() for builds without CUDA/NCCL: a clear error and exit code 2.
#include <cstdio>

#include "train_gpu.h"

namespace example {

int train_on_gpu(const Options&) {
  std::fprintf(stderr,
               "train: --gpu needs a build with CUDA and NCCL (this one has none; configure "
               "with -DHVDRUN_WITH_NCCL=ON on a machine with the CUDA toolkit and NCCL)\n");
  return 2;
}

}  // namespace example
