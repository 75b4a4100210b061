// The collective descriptor's wire form and comparison (see collective_check.h). Wire
// (little-endian): 'H', kind, dtype, op, root i32, count u64, sequence u64.
#include "worker-runtime/tcp/collective_check.h"

#include "rendezvous/collective_names.h"

namespace hvdrun::tcp {
namespace {

constexpr std::byte kMagic{'H'};

template <class T>
void put(std::byte* out, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    out[i] = static_cast<std::byte>(static_cast<std::uint64_t>(value) >> (8 * i));
  }
}

template <class T>
T get(const std::byte* in) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    value |= std::to_integer<std::uint64_t>(in[i]) << (8 * i);
  }
  return static_cast<T>(value);
}

bool same_call(const Descriptor& a, const Descriptor& b) {
  if (a.kind != b.kind || a.sequence != b.sequence) return false;
  switch (a.kind) {
    case CollectiveKind::kAllreduce:
    case CollectiveKind::kReduceScatter:
      return a.dtype == b.dtype && a.op == b.op && a.count == b.count;
    case CollectiveKind::kAllreduceMany:
      return a.op == b.op && a.count == b.count;
    case CollectiveKind::kBroadcast:
      return a.dtype == b.dtype && a.count == b.count && a.root == b.root;
    case CollectiveKind::kAllgather:
      return a.dtype == b.dtype;
    case CollectiveKind::kBarrier:
      return true;
  }
  return false;
}

std::string elements(std::uint64_t count) {
  return std::to_string(count) + (count == 1 ? " element" : " elements");
}

}  // namespace

static_assert(static_cast<int>(CollectiveKind::kBarrier) == rdzv::kBarrierKind &&
                  static_cast<int>(CollectiveKind::kAllreduceMany) == 6,
              "rdzv::collective_kind_name's codes");

std::string_view kind_name(CollectiveKind kind) {
  return rdzv::collective_kind_name(static_cast<std::uint8_t>(kind));
}

DescriptorBytes encode(const Descriptor& d) {
  DescriptorBytes out{};
  out[0] = kMagic;
  out[1] = static_cast<std::byte>(d.kind);
  out[2] = static_cast<std::byte>(d.dtype);
  out[3] = static_cast<std::byte>(d.op);
  put<std::uint32_t>(&out[4], static_cast<std::uint32_t>(d.root));
  put<std::uint64_t>(&out[8], d.count);
  put<std::uint64_t>(&out[16], d.sequence);
  return out;
}

std::optional<Descriptor> decode(const DescriptorBytes& bytes) {
  const auto kind = std::to_integer<std::uint8_t>(bytes[1]);
  const auto dtype = static_cast<DataType>(std::to_integer<std::uint8_t>(bytes[2]));
  const auto op = std::to_integer<std::uint8_t>(bytes[3]);
  if (bytes[0] != kMagic || kind < 1 ||
      kind > static_cast<std::uint8_t>(CollectiveKind::kAllreduceMany) ||
      element_size(dtype) == 0 || op > static_cast<std::uint8_t>(ReduceOp::kProduct)) {
    return std::nullopt;
  }
  Descriptor d;
  d.kind = static_cast<CollectiveKind>(kind);
  d.dtype = dtype;
  d.op = static_cast<ReduceOp>(op);
  d.root = static_cast<std::int32_t>(get<std::uint32_t>(&bytes[4]));
  d.count = get<std::uint64_t>(&bytes[8]);
  d.sequence = get<std::uint64_t>(&bytes[16]);
  return d;
}

std::string describe(const Descriptor& d) {
  std::string text(kind_name(d.kind));
  switch (d.kind) {
    case CollectiveKind::kAllreduce:
    case CollectiveKind::kReduceScatter:
      return text + "(" + std::string(to_string(d.dtype)) + ", " + std::string(to_string(d.op)) +
             ", " + elements(d.count) + ")";
    case CollectiveKind::kAllreduceMany:
      return text + "(" + std::string(to_string(d.op)) + ", " + std::to_string(d.count) +
             (d.count == 1 ? " tensor)" : " tensors)");
    case CollectiveKind::kBroadcast:
      return text + "(" + std::string(to_string(d.dtype)) + ", " + elements(d.count) + ", root " +
             std::to_string(d.root) + ")";
    case CollectiveKind::kAllgather:
      return text + "(" + std::string(to_string(d.dtype)) + ")";
    case CollectiveKind::kBarrier:
      return text + "()";
  }
  return text;
}

std::string mismatch(const Descriptor& mine, int my_rank, const Descriptor& theirs,
                     int their_rank) {
  if (same_call(mine, theirs)) return {};
  const bool order = mine.sequence != theirs.sequence;
  const auto call = [&](const Descriptor& d) {
    return order ? std::string(kind_name(d.kind)) + " #" + std::to_string(d.sequence) + " " +
                       describe(d).substr(kind_name(d.kind).size())
                 : describe(d);
  };
  const bool mine_first = my_rank < their_rank;
  const Descriptor& first = mine_first ? mine : theirs;
  const Descriptor& second = mine_first ? theirs : mine;
  return std::string(kind_name(mine.kind)) + " #" + std::to_string(mine.sequence) + ": rank " +
         std::to_string(mine_first ? my_rank : their_rank) + " called " + call(first) +
         " but rank " + std::to_string(mine_first ? their_rank : my_rank) + " called " +
         call(second);
}

}  // namespace hvdrun::tcp
