// The preflight's GPU matrix product: C = A x B for n x n row-major floats (n a multiple of 16),
// a tiled kernel of this project's own, enqueued on `stream`. Returns the launch's status.
#pragma once

#include <cuda_runtime.h>

namespace hvdrun::preflight {

cudaError_t enqueue_gemm(int n, const float* a, const float* b, float* c, cudaStream_t stream);

}  // namespace hvdrun::preflight
