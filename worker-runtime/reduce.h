// Element-wise reduction kernels of the collectives: dst = op(a, b) over `count` elements,
// and the final division of kAverage. float16 / bfloat16 reduce through float per element.
#pragma once

#include <cstddef>

#include "hvdrun/types.h"

namespace hvdrun {

// dst[i] = op(a[i], b[i]). dst may be a or b (exactly, not a partial overlap).
// kAverage reduces as kSum; divide() finishes it.
void combine(void* dst, const void* a, const void* b, std::size_t count, DataType dtype,
             ReduceOp op) noexcept;

// dst[i] = op(dst[i], src[i]).
inline void reduce_into(void* dst, const void* src, std::size_t count, DataType dtype,
                        ReduceOp op) noexcept {
  combine(dst, dst, src, count, dtype, op);
}

// data[i] /= divisor (integers truncate toward zero); used once at the end of kAverage.
void divide(void* data, std::size_t count, DataType dtype, int divisor) noexcept;

}  // namespace hvdrun
