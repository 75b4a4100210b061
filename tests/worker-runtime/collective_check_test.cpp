// The collective descriptor (tcp/collective_check.h): its wire form, what counts as a match,
// and the message that names both sides.
#include "worker-runtime/tcp/collective_check.h"

#include <gtest/gtest.h>

namespace hvdrun::tcp {
namespace {

Descriptor allreduce(DataType dtype, std::uint64_t count, ReduceOp op = ReduceOp::kSum,
                     std::uint64_t sequence = 12) {
  return {CollectiveKind::kAllreduce, dtype, op, 0, count, sequence};
}

TEST(CollectiveCheck, TheWireFormRoundTrips) {
  const Descriptor d{CollectiveKind::kBroadcast,   DataType::kInt64, ReduceOp::kMax, 3,
                     (std::uint64_t{1} << 40) + 5, 987654321};
  const auto decoded = decode(encode(d));
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->kind, d.kind);
  EXPECT_EQ(decoded->dtype, d.dtype);
  EXPECT_EQ(decoded->op, d.op);
  EXPECT_EQ(decoded->root, 3);
  EXPECT_EQ(decoded->count, d.count);
  EXPECT_EQ(decoded->sequence, d.sequence);
}

TEST(CollectiveCheck, BytesThatAreNoDescriptorAreRefused) {
  DescriptorBytes zero{};
  EXPECT_FALSE(decode(zero));
  auto bytes = encode(allreduce(DataType::kFloat32, 4));
  bytes[1] = std::byte{9};  // no such kind
  EXPECT_FALSE(decode(bytes));
  bytes = encode(allreduce(DataType::kFloat32, 4));
  bytes[2] = std::byte{200};  // no such type
  EXPECT_FALSE(decode(bytes));
  bytes = encode(allreduce(DataType::kFloat32, 4));
  bytes[3] = std::byte{77};  // no such operation
  EXPECT_FALSE(decode(bytes));
}

TEST(CollectiveCheck, SameByteCountButAnotherTypeIsAMismatchNamingBothSides) {
  EXPECT_EQ(
      mismatch(allreduce(DataType::kFloat64, 1000), 1, allreduce(DataType::kFloat32, 2000), 0),
      "allreduce #12: rank 0 called allreduce(float32, sum, 2000 elements) but rank 1 "
      "called allreduce(float64, sum, 1000 elements)");
}

TEST(CollectiveCheck, OperationRootAndKindMismatchesAreNamed) {
  EXPECT_EQ(mismatch(allreduce(DataType::kFloat32, 8, ReduceOp::kSum), 0,
                     allreduce(DataType::kFloat32, 8, ReduceOp::kMax), 3),
            "allreduce #12: rank 0 called allreduce(float32, sum, 8 elements) but rank 3 called "
            "allreduce(float32, max, 8 elements)");
  const Descriptor root0{CollectiveKind::kBroadcast, DataType::kUInt8, ReduceOp::kSum, 0, 1, 4};
  Descriptor root1 = root0;
  root1.root = 1;
  EXPECT_EQ(mismatch(root0, 1, root1, 0),
            "broadcast #4: rank 0 called broadcast(uint8, 1 element, root 1) but rank 1 called "
            "broadcast(uint8, 1 element, root 0)");
  const Descriptor barrier{CollectiveKind::kBarrier, DataType::kUInt8, ReduceOp::kSum, 0, 0, 12};
  EXPECT_EQ(mismatch(barrier, 0, allreduce(DataType::kFloat32, 8), 1),
            "barrier #12: rank 0 called barrier() but rank 1 called allreduce(float32, sum, 8 "
            "elements)");
}

TEST(CollectiveCheck, OneCallMoreOnOneRankShowsTheNumbers) {
  const Descriptor barrier{CollectiveKind::kBarrier, DataType::kUInt8, ReduceOp::kSum, 0, 0, 2};
  EXPECT_EQ(mismatch(barrier, 1, allreduce(DataType::kFloat32, 8, ReduceOp::kSum, 3), 0),
            "barrier #2: rank 0 called allreduce #3 (float32, sum, 8 elements) but rank 1 called "
            "barrier #2 ()");
}

TEST(CollectiveCheck, WhatMayDifferDoesNotCount) {
  // allgather: every rank its own count; barrier: type and count mean nothing; broadcast and
  // barrier ignore the operation.
  const Descriptor a{CollectiveKind::kAllgather, DataType::kInt32, ReduceOp::kSum, 0, 5, 7};
  Descriptor b = a;
  b.count = 9;
  EXPECT_EQ(mismatch(a, 0, b, 1), "");
  b.dtype = DataType::kInt64;
  EXPECT_NE(mismatch(a, 0, b, 1), "");
  const Descriptor bar1{CollectiveKind::kBarrier, DataType::kUInt8, ReduceOp::kSum, 0, 0, 7};
  const Descriptor bar2{CollectiveKind::kBarrier, DataType::kFloat64, ReduceOp::kMax, 2, 3, 7};
  EXPECT_EQ(mismatch(bar1, 0, bar2, 1), "");
  const Descriptor bc1{CollectiveKind::kBroadcast, DataType::kUInt8, ReduceOp::kSum, 1, 4, 7};
  Descriptor bc2 = bc1;
  bc2.op = ReduceOp::kMin;
  EXPECT_EQ(mismatch(bc1, 0, bc2, 1), "");
}

}  // namespace
}  // namespace hvdrun::tcp
