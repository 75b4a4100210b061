// Element sizes and names of DataType / ReduceOp, and the float16 / bfloat16 <-> float
// conversions (round to nearest even; NaN, infinities and subnormals preserved).
#include "hvdrun/types.h"

#include <bit>
#include <cstdint>

#include "rendezvous/collective_names.h"

namespace hvdrun {

std::size_t element_size(DataType dtype) noexcept {
  switch (dtype) {
    case DataType::kFloat32:
    case DataType::kInt32:
      return 4;
    case DataType::kFloat64:
    case DataType::kInt64:
      return 8;
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return 2;
    case DataType::kUInt8:
      return 1;
  }
  return 0;
}

static_assert(static_cast<int>(DataType::kUInt8) == 6, "rdzv::dtype_name's codes");

std::string_view to_string(DataType dtype) noexcept {
  return rdzv::dtype_name(static_cast<std::uint8_t>(dtype));
}

std::string_view to_string(ReduceOp op) noexcept {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kAverage:
      return "average";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kProduct:
      return "product";
  }
  return "unknown";
}

float to_float(float16_t value) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(value.bits & 0x8000u) << 16;
  const std::uint32_t exponent = (value.bits >> 10) & 0x1fu;
  const std::uint32_t mantissa = value.bits & 0x3ffu;
  if (exponent == 0x1f) {  // infinity or NaN (payload kept)
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  }
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(magnitude));
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

float16_t to_float16(float value) noexcept {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  std::uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {  // NaN: stays a quiet NaN, top payload bits kept
    return {static_cast<std::uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu))};
  }
  if (magnitude >= 0x477ff000u) {  // >= 65520 rounds to infinity (65504 is the largest half)
    return {static_cast<std::uint16_t>(sign | 0x7c00u)};
  }
  if (magnitude < 0x38800000u) {  // below 2^-14: subnormal half; adding 0.5 rounds to 2^-24 steps
    const float rounded = std::bit_cast<float>(magnitude) + 0.5f;
    const std::uint32_t steps = std::bit_cast<std::uint32_t>(rounded) - 0x3f000000u;
    return {static_cast<std::uint16_t>(sign | steps)};
  }
  const std::uint32_t odd = (magnitude >> 13) & 1u;
  magnitude += 0xc8000fffu + odd;  // rebias exponent (127 -> 15), add half an ulp (ties to even)
  return {static_cast<std::uint16_t>(sign | (magnitude >> 13))};
}

float to_float(bfloat16_t value) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(value.bits) << 16);
}

bfloat16_t to_bfloat16(float value) noexcept {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep sign and payload top, force quiet
    return {static_cast<std::uint16_t>((bits >> 16) | 0x40u)};
  }
  const std::uint32_t odd = (bits >> 16) & 1u;
  return {static_cast<std::uint16_t>((bits + 0x7fffu + odd) >> 16)};
}

}  // namespace hvdrun
