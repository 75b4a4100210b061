// The names of collectives and element types (collective_names.h).
#include "rendezvous/collective_names.h"

#include <array>
#include <cstdio>

namespace hvdrun::rdzv {

std::string_view collective_kind_name(std::uint8_t kind) noexcept {
  static constexpr std::array<std::string_view, 7> kNames = {
      "?", "allreduce", "broadcast", "allgather", "barrier", "reduce_scatter", "allreduce_many"};
  return kind < kNames.size() ? kNames[kind] : kNames[0];
}

std::string_view dtype_name(std::uint8_t dtype) noexcept {
  static constexpr std::array<std::string_view, 7> kNames = {
      "float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8"};
  return dtype < kNames.size() ? kNames[dtype] : "unknown";
}

std::string describe_bytes(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024;
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  return text;
}

std::string describe_collective(std::uint64_t what) {
  std::string text(collective_kind_name(packed_kind(what)));
  if (packed_kind(what) == kBarrierKind) return text;
  return text + " (" + std::string(dtype_name(packed_dtype(what))) + ", " +
         describe_bytes(packed_bytes(what)) + ")";
}

}  // namespace hvdrun::rdzv
