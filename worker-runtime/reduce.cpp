// Reduction kernels: plain loops over typed pointers that the compiler vectorizes for the
// float/double/integer types (this file is built with the vectorizer on, see CMakeLists.txt);
// the 16-bit float types convert each element to float and back.
#include "worker-runtime/reduce.h"

#include <cstdint>
#include <type_traits>

namespace hvdrun {
namespace {

struct Sum {
  template <class T>
  T operator()(T x, T y) const noexcept {
    return static_cast<T>(x + y);
  }
};
struct Product {
  template <class T>
  T operator()(T x, T y) const noexcept {
    return static_cast<T>(x * y);
  }
};
struct Min {
  template <class T>
  T operator()(T x, T y) const noexcept {
    return y < x ? y : x;
  }
};
struct Max {
  template <class T>
  T operator()(T x, T y) const noexcept {
    return x < y ? y : x;
  }
};

template <class T, class Op>
void combine_typed(void* dst, const void* a, const void* b, std::size_t count, Op op) noexcept {
  T* out = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (std::size_t i = 0; i < count; ++i) out[i] = op(x[i], y[i]);
}

// 16-bit floats: widen, apply, round back (round to nearest even).
template <class H, class Op>
void combine_half(void* dst, const void* a, const void* b, std::size_t count, Op op) noexcept {
  H* out = static_cast<H*>(dst);
  const H* x = static_cast<const H*>(a);
  const H* y = static_cast<const H*>(b);
  for (std::size_t i = 0; i < count; ++i) {
    const float r = op(to_float(x[i]), to_float(y[i]));
    if constexpr (std::is_same_v<H, float16_t>) {
      out[i] = to_float16(r);
    } else {
      out[i] = to_bfloat16(r);
    }
  }
}

template <class Op>
void combine_op(void* dst, const void* a, const void* b, std::size_t count, DataType dtype,
                Op op) noexcept {
  switch (dtype) {
    case DataType::kFloat32:
      return combine_typed<float>(dst, a, b, count, op);
    case DataType::kFloat64:
      return combine_typed<double>(dst, a, b, count, op);
    case DataType::kInt32:
      return combine_typed<std::int32_t>(dst, a, b, count, op);
    case DataType::kInt64:
      return combine_typed<std::int64_t>(dst, a, b, count, op);
    case DataType::kUInt8:
      return combine_typed<std::uint8_t>(dst, a, b, count, op);
    case DataType::kFloat16:
      return combine_half<float16_t>(dst, a, b, count, op);
    case DataType::kBFloat16:
      return combine_half<bfloat16_t>(dst, a, b, count, op);
  }
}

// Integers divide by an int (promotion keeps uint8 / large divisors right); floats by T.
template <class T, class D>
void divide_typed(void* data, std::size_t count, D divisor) noexcept {
  T* p = static_cast<T*>(data);
  for (std::size_t i = 0; i < count; ++i) p[i] = static_cast<T>(p[i] / divisor);
}

template <class H>
void divide_half(void* data, std::size_t count, float divisor) noexcept {
  H* p = static_cast<H*>(data);
  for (std::size_t i = 0; i < count; ++i) {
    const float r = to_float(p[i]) / divisor;
    if constexpr (std::is_same_v<H, float16_t>) {
      p[i] = to_float16(r);
    } else {
      p[i] = to_bfloat16(r);
    }
  }
}

}  // namespace

void combine(void* dst, const void* a, const void* b, std::size_t count, DataType dtype,
             ReduceOp op) noexcept {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage:
      return combine_op(dst, a, b, count, dtype, Sum{});
    case ReduceOp::kProduct:
      return combine_op(dst, a, b, count, dtype, Product{});
    case ReduceOp::kMin:
      return combine_op(dst, a, b, count, dtype, Min{});
    case ReduceOp::kMax:
      return combine_op(dst, a, b, count, dtype, Max{});
  }
}

void divide(void* data, std::size_t count, DataType dtype, int divisor) noexcept {
  switch (dtype) {
    case DataType::kFloat32:
      return divide_typed<float>(data, count, static_cast<float>(divisor));
    case DataType::kFloat64:
      return divide_typed<double>(data, count, static_cast<double>(divisor));
    case DataType::kInt32:
      return divide_typed<std::int32_t>(data, count, divisor);
    case DataType::kInt64:
      return divide_typed<std::int64_t>(data, count, divisor);
    case DataType::kUInt8:
      return divide_typed<std::uint8_t>(data, count, divisor);
    case DataType::kFloat16:
      return divide_half<float16_t>(data, count, static_cast<float>(divisor));
    case DataType::kBFloat16:
      return divide_half<bfloat16_t>(data, count, static_cast<float>(divisor));
  }
}

}  // namespace hvdrun
