// launch_spin(): one GPU thread busy-waits on `stream` for `seconds` of the GPU's global timer.
#pragma once

#include <cuda_runtime.h>

cudaError_t launch_spin(cudaStream_t stream, double seconds);
