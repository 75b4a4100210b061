// CUDA kernels of the example's MLP (mlp.h's model on the GPU): per-sample forward and
// backward with gradients summed by atomics, and the SGD step. Parameter layout as in
// example::Mlp: w1 [in][hidden], b1 [hidden], w2 [hidden][out], b2 [out].
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace example::gpu {

inline constexpr int kMaxHidden = 128;
inline constexpr int kMaxClasses = 16;

struct Dims {
  int in = 0, hidden = 0, out = 0;
};

// Rows of a pass: row t is order[base + t * stride] (order may be null: base + t * stride).
struct Rows {
  const int* order = nullptr;
  int base = 0, stride = 1, count = 0;
};

// Adds the summed loss and the number of correct predictions over `rows` to sums[0] and
// sums[1]; with `grad` non-null also adds the loss gradient to grad[0, params) and the row
// count to grad[params].
cudaError_t accumulate(const float* x, const int* y, Rows rows, Dims dims, const float* params,
                       float* grad, double* sums, cudaStream_t stream);

// params[i] -= lr * grad[i] / grad[count] for i < count.
cudaError_t sgd_step(float* params, const float* grad, std::size_t count, float lr,
                     cudaStream_t stream);

}  // namespace example::gpu
