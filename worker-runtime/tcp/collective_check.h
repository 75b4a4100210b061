// The descriptor each TCP-ring collective sends ahead of its data, so that ranks that call
// collectives that do not match (another kind, type, operation, count, root, or one call
// more) fail with an error naming both sides instead of exchanging bytes that mean something
// else. Each rank checks its previous neighbour's descriptor against its own before it takes
// any of that neighbour's data; along the ring, that covers every pair.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "hvdrun/types.h"

namespace hvdrun::tcp {

// The last two are device (NCCL) calls, checked only with HVDRUN_CHECK_COLLECTIVES=1.
enum class CollectiveKind : std::uint8_t {
  kAllreduce = 1,
  kBroadcast,
  kAllgather,
  kBarrier,
  kReduceScatter,
  kAllreduceMany,
};

struct Descriptor {
  CollectiveKind kind = CollectiveKind::kBarrier;
  DataType dtype = DataType::kUInt8;  // not compared for a barrier
  ReduceOp op = ReduceOp::kSum;       // compared for allreduce
  std::int32_t root = 0;              // compared for broadcast
  // Compared for allreduce, broadcast and reduce_scatter (its per-rank count), not allgather;
  // for allreduce_many the number of tensors.
  std::uint64_t count = 0;
  std::uint64_t sequence = 0;  // the ring's collective number, from 1
};

inline constexpr std::size_t kDescriptorBytes = 24;
using DescriptorBytes = std::array<std::byte, kDescriptorBytes>;

DescriptorBytes encode(const Descriptor& descriptor);
// Null when the bytes are no descriptor (the streams are out of step).
std::optional<Descriptor> decode(const DescriptorBytes& bytes);

// "allreduce", "reduce_scatter", ...
std::string_view kind_name(CollectiveKind kind);

// "allreduce(float32, sum, 2000 elements)", "broadcast(int64, 8 elements, root 1)",
// "allgather(uint8)", "barrier()", "reduce_scatter(float32, sum, 8 elements)",
// "allreduce_many(sum, 12 tensors)".
std::string describe(const Descriptor& descriptor);

// Empty when rank `their_rank`'s descriptor matches this rank's; otherwise the error message,
// lower rank first: "allreduce #12: rank 0 called allreduce(float32, sum, 2000 elements) but
// rank 1 called allreduce(float64, sum, 1000 elements)".
std::string mismatch(const Descriptor& mine, int my_rank, const Descriptor& theirs, int their_rank);

}  // namespace hvdrun::tcp
