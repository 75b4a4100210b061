// The names of what a collective is, as the workers' heartbeats code it (progress.h): a kind
// and an element type, packed with the size into one word (kind | dtype << 8 | bytes << 16).
// The codes are libhvdrun's (tcp::CollectiveKind, hvdrun::DataType); their names live here,
// where both the workers and the launcher read them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace hvdrun::rdzv {

// "allreduce", "broadcast", ...; "?" for an unknown code.
std::string_view collective_kind_name(std::uint8_t kind) noexcept;
// "float32", "int64", ...; "unknown" for an unknown code.
std::string_view dtype_name(std::uint8_t dtype) noexcept;
// "4.0 MiB", "512 B".
std::string describe_bytes(std::uint64_t bytes);

inline constexpr std::uint8_t kBarrierKind = 4;
inline constexpr std::uint64_t kMaxPackedBytes = (std::uint64_t{1} << 48) - 1;

constexpr std::uint64_t pack_collective(std::uint8_t kind, std::uint8_t dtype,
                                        std::uint64_t bytes) noexcept {
  return kind | std::uint64_t{dtype} << 8 |
         (bytes > kMaxPackedBytes ? kMaxPackedBytes : bytes) << 16;
}
constexpr std::uint8_t packed_kind(std::uint64_t what) noexcept {
  return what & 0xFF;
}
constexpr std::uint8_t packed_dtype(std::uint64_t what) noexcept {
  return (what >> 8) & 0xFF;
}
constexpr std::uint64_t packed_bytes(std::uint64_t what) noexcept {
  return what >> 16;
}

// "allreduce (float32, 4.0 MiB)"; a barrier is its kind alone.
std::string describe_collective(std::uint64_t what);

}  // namespace hvdrun::rdzv
