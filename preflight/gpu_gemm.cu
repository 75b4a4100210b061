// The preflight's GPU matrix product (gpu_gemm.h): 16 x 16 tiles in shared memory.
#include "preflight/gpu_gemm.h"

namespace hvdrun::preflight {
namespace {

constexpr int kTile = 16;

__global__ void gemm_tiled(int n, const float* a, const float* b, float* c) {
  __shared__ float tile_a[kTile][kTile];
  __shared__ float tile_b[kTile][kTile];
  const int row = blockIdx.y * kTile + threadIdx.y;
  const int col = blockIdx.x * kTile + threadIdx.x;
  float sum = 0.0f;
  for (int t = 0; t < n; t += kTile) {
    tile_a[threadIdx.y][threadIdx.x] = a[row * n + t + threadIdx.x];
    tile_b[threadIdx.y][threadIdx.x] = b[(t + threadIdx.y) * n + col];
    __syncthreads();
    for (int k = 0; k < kTile; ++k) sum += tile_a[threadIdx.y][k] * tile_b[k][threadIdx.x];
    __syncthreads();
  }
  c[row * n + col] = sum;
}

}  // namespace

cudaError_t enqueue_gemm(int n, const float* a, const float* b, float* c, cudaStream_t stream) {
  if (n <= 0 || n % kTile != 0) return cudaErrorInvalidValue;
  const dim3 block(kTile, kTile);
  const dim3 grid(n / kTile, n / kTile);
  gemm_tiled<<<grid, block, 0, stream>>>(n, a, b, c);
  return cudaGetLastError();
}

}  // namespace hvdrun::preflight
