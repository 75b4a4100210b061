// The --gpu path of the example training job (train_gpu.cpp; train_gpu_stub.cpp in builds
// without CUDA, which prints why and returns 2).
#pragma once

#include "train_options.h"

namespace example {

// Runs the whole job on the GPU; returns main()'s exit code.
int train_on_gpu(const Options& options);

}  // namespace example
