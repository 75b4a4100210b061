// A kernel that keeps a stream busy for a given time: it holds the NCCL call queued behind it,
// so the completion wait of the backend really waits on the GPU.
#include "tests/gpu/spin_kernel.h"

namespace {

__device__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin(unsigned long long nanoseconds) {
  const unsigned long long start = now_ns();
  while (now_ns() - start < nanoseconds) {
  }
}

}  // namespace

cudaError_t launch_spin(cudaStream_t stream, double seconds) {
  spin<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(seconds * 1e9));
  return cudaGetLastError();
}
