// The example MLP's kernels (see mlp_kernels.h): one thread per sample.
#include <algorithm>

#include "mlp_kernels.h"

namespace example::gpu {
namespace {

__global__ void accumulate_kernel(const float* x, const int* y, Rows rows, Dims d,
                                  const float* params, float* grad, double* sums) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= rows.count) return;
  const int r = rows.order ? rows.order[rows.base + t * rows.stride] : rows.base + t * rows.stride;
  const float* xr = x + static_cast<size_t>(r) * d.in;
  const float* w1 = params;
  const float* b1 = w1 + d.in * d.hidden;
  const float* w2 = b1 + d.hidden;
  const float* b2 = w2 + d.hidden * d.out;
  float h[kMaxHidden], p[kMaxClasses];
  for (int j = 0; j < d.hidden; ++j) h[j] = b1[j];
  for (int i = 0; i < d.in; ++i) {
    for (int j = 0; j < d.hidden; ++j) h[j] += xr[i] * w1[i * d.hidden + j];
  }
  for (int j = 0; j < d.hidden; ++j) h[j] = fmaxf(h[j], 0.0f);
  float top = -INFINITY;
  int best = 0;
  for (int k = 0; k < d.out; ++k) {
    float z = b2[k];
    for (int j = 0; j < d.hidden; ++j) z += h[j] * w2[j * d.out + k];
    p[k] = z;
    if (z > top) top = z, best = k;
  }
  float total = 0.0f;
  for (int k = 0; k < d.out; ++k) total += (p[k] = expf(p[k] - top));
  for (int k = 0; k < d.out; ++k) p[k] /= total;
  const int label = y[r];
  atomicAdd(&sums[0], -static_cast<double>(logf(fmaxf(p[label], 1e-12f))));
  if (best == label) atomicAdd(&sums[1], 1.0);
  if (grad == nullptr) return;
  float* g_w1 = grad;
  float* g_b1 = g_w1 + d.in * d.hidden;
  float* g_w2 = g_b1 + d.hidden;
  float* g_b2 = g_w2 + d.hidden * d.out;
  p[label] -= 1.0f;  // dL/dlogits
  for (int j = 0; j < d.hidden; ++j) {
    float dh = 0.0f;
    for (int k = 0; k < d.out; ++k) {
      atomicAdd(&g_w2[j * d.out + k], h[j] * p[k]);
      dh += w2[j * d.out + k] * p[k];
    }
    if (h[j] <= 0.0f) continue;
    for (int i = 0; i < d.in; ++i) atomicAdd(&g_w1[i * d.hidden + j], xr[i] * dh);
    atomicAdd(&g_b1[j], dh);
  }
  for (int k = 0; k < d.out; ++k) atomicAdd(&g_b2[k], p[k]);
  atomicAdd(&g_b2[d.out], 1.0f);  // the row count after the parameters
}

__global__ void sgd_kernel(float* params, const float* grad, size_t count, float lr) {
  const float scale = lr / grad[count];
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    params[i] -= scale * grad[i];
  }
}

}  // namespace

cudaError_t accumulate(const float* x, const int* y, Rows rows, Dims dims, const float* params,
                       float* grad, double* sums, cudaStream_t stream) {
  if (dims.hidden > kMaxHidden || dims.out > kMaxClasses) return cudaErrorInvalidValue;
  if (rows.count <= 0) return cudaSuccess;
  constexpr int kThreads = 64;
  accumulate_kernel<<<(rows.count + kThreads - 1) / kThreads, kThreads, 0, stream>>>(
      x, y, rows, dims, params, grad, sums);
  return cudaGetLastError();
}

cudaError_t sgd_step(float* params, const float* grad, size_t count, float lr,
                     cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int blocks = std::max(1, static_cast<int>((count + kThreads - 1) / kThreads));
  sgd_kernel<<<blocks, kThreads, 0, stream>>>(params, grad, count, lr);
  return cudaGetLastError();
}

}  // namespace example::gpu
