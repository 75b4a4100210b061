// Element types and reduction operations of hvdrun collectives, with the 16-bit float
// storage types (IEEE binary16 and bfloat16) and their conversions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hvdrun/export.h"

namespace hvdrun {

enum class DataType : std::uint8_t {
  kFloat32,
  kFloat64,
  kFloat16,
  kBFloat16,
  kInt32,
  kInt64,
  kUInt8
};

enum class ReduceOp : std::uint8_t { kSum, kAverage, kMin, kMax, kProduct };

// Size in bytes of one element.
HVDRUN_API std::size_t element_size(DataType dtype) noexcept;
HVDRUN_API std::string_view to_string(DataType dtype) noexcept;
HVDRUN_API std::string_view to_string(ReduceOp op) noexcept;

// IEEE 754 binary16, stored as its bit pattern. Conversions round to nearest even.
struct float16_t {
  std::uint16_t bits = 0;
};
// bfloat16 (upper half of a float32), stored as its bit pattern. Conversions round to nearest even.
struct bfloat16_t {
  std::uint16_t bits = 0;
};

HVDRUN_API float to_float(float16_t value) noexcept;
HVDRUN_API float to_float(bfloat16_t value) noexcept;
HVDRUN_API float16_t to_float16(float value) noexcept;
HVDRUN_API bfloat16_t to_bfloat16(float value) noexcept;

// DataType of a C++ element type, for the typed helpers in hvdrun.h.
template <class T>
struct data_type_of;
template <>
struct data_type_of<float> {
  static constexpr DataType value = DataType::kFloat32;
};
template <>
struct data_type_of<double> {
  static constexpr DataType value = DataType::kFloat64;
};
template <>
struct data_type_of<float16_t> {
  static constexpr DataType value = DataType::kFloat16;
};
template <>
struct data_type_of<bfloat16_t> {
  static constexpr DataType value = DataType::kBFloat16;
};
template <>
struct data_type_of<std::int32_t> {
  static constexpr DataType value = DataType::kInt32;
};
template <>
struct data_type_of<std::int64_t> {
  static constexpr DataType value = DataType::kInt64;
};
template <>
struct data_type_of<std::uint8_t> {
  static constexpr DataType value = DataType::kUInt8;
};
template <class T>
inline constexpr DataType data_type_of_v = data_type_of<T>::value;

}  // namespace hvdrun
