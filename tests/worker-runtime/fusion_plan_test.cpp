// plan_fusion(): bucket boundaries at the threshold, alignment, data types, direct tensors, and
// a packing round trip on host memory that checks every tensor lands intact and alone.
#include "worker-runtime/nccl/fusion_plan.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

namespace hvdrun::nccl {
namespace {

std::vector<TensorShape> floats(std::initializer_list<std::size_t> counts) {
  std::vector<TensorShape> shapes;
  for (std::size_t c : counts) shapes.push_back({c, DataType::kFloat32});
  return shapes;
}

// Packs host tensors into a buffer by the plan, checks each lies within the reduced bytes
// without overlapping another, and unpacks into fresh tensors that must equal the originals.
void check_round_trip(const std::vector<TensorShape>& shapes, std::size_t threshold) {
  const std::vector<FusionBucket> plan = plan_fusion(shapes, threshold);
  std::vector<std::vector<unsigned char>> tensors(shapes.size()), back(shapes.size());
  unsigned char value = 1;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    tensors[i].resize(shapes[i].count * element_size(shapes[i].dtype));
    for (auto& b : tensors[i]) b = value++;
    back[i].assign(tensors[i].size(), 0);
  }
  std::vector<int> seen(shapes.size(), 0);
  std::vector<unsigned char> buffer(fusion_buffer_bytes(plan));
  EXPECT_LE(buffer.size(), threshold);
  for (const FusionBucket& bucket : plan) {
    std::vector<int> owner(bucket.bytes, -1);
    for (std::size_t k = 0; k < bucket.tensors.size(); ++k) {
      const std::size_t t = bucket.tensors[k];
      ++seen[t];
      EXPECT_EQ(shapes[t].dtype, bucket.dtype);
      if (!bucket.packed()) {
        EXPECT_EQ(bucket.tensors.size(), 1u);
        back[t] = tensors[t];  // reduced in place
        continue;
      }
      const std::size_t offset = bucket.offsets[k], bytes = tensors[t].size();
      EXPECT_EQ(offset % kFusionAlignment, 0u);
      ASSERT_LE(offset + bytes, bucket.bytes);
      for (std::size_t b = offset; b < offset + bytes; ++b) {
        EXPECT_EQ(owner[b], -1) << "tensors overlap at byte " << b;
        owner[b] = static_cast<int>(t);
      }
      std::memcpy(buffer.data() + offset, tensors[t].data(), bytes);
    }
    if (!bucket.packed()) continue;
    EXPECT_EQ(bucket.bytes % element_size(bucket.dtype), 0u);
    for (std::size_t k = 0; k < bucket.tensors.size(); ++k) {
      const std::size_t t = bucket.tensors[k];
      std::memcpy(back[t].data(), buffer.data() + bucket.offsets[k], back[t].size());
    }
  }
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    EXPECT_EQ(seen[i], shapes[i].count > 0 ? 1 : 0) << "tensor " << i;
    EXPECT_EQ(back[i], tensors[i]) << "tensor " << i;
  }
}

TEST(FusionPlan, SmallTensorsShareOneAlignedBucket) {
  const auto shapes = floats({4, 100, 64});  // 16 B, 400 B, 256 B
  const auto plan = plan_fusion(shapes, 1 << 20);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].tensors, (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(plan[0].offsets, (std::vector<std::size_t>{0, 256, 768}));
  EXPECT_EQ(plan[0].bytes, 768u + 256u);
  check_round_trip(shapes, 1 << 20);
}

TEST(FusionPlan, ThresholdEdges) {
  // Two 512-byte tensors: 1024 bytes fit a 1024 threshold exactly, not 1023.
  EXPECT_EQ(plan_fusion(floats({128, 128}), 1024).size(), 1u);
  const auto split = plan_fusion(floats({128, 128}), 1023);
  ASSERT_EQ(split.size(), 2u);
  EXPECT_FALSE(split[0].packed());  // a bucket of one is reduced in place
  EXPECT_FALSE(split[1].packed());
  // A tensor exactly at the threshold is not larger than it, but alone it is direct.
  const auto exact = plan_fusion(floats({256, 1}), 1024);
  ASSERT_EQ(exact.size(), 2u);
  EXPECT_EQ(exact[0].tensors, (std::vector<std::size_t>{0}));
  // 256 tensors of 16 KiB with a 1 MiB threshold: 4 buckets of 64.
  std::vector<TensorShape> many(256, TensorShape{4096, DataType::kFloat32});
  const auto buckets = plan_fusion(many, 1 << 20);
  ASSERT_EQ(buckets.size(), 4u);
  for (const auto& b : buckets) EXPECT_EQ(b.tensors.size(), 64u);
  EXPECT_EQ(fusion_buffer_bytes(buckets), std::size_t{1} << 20);
  check_round_trip(many, 1 << 20);
  check_round_trip(many, 1000 * 16384 / 7);
}

TEST(FusionPlan, ZeroThresholdDisablesFusion) {
  const auto shapes = floats({1, 2, 3, 0, 5});
  const auto plan = plan_fusion(shapes, 0);
  ASSERT_EQ(plan.size(), 4u);  // the empty tensor is left out
  for (const auto& b : plan) {
    EXPECT_FALSE(b.packed());
    EXPECT_EQ(b.tensors.size(), 1u);
  }
  EXPECT_EQ(plan[3].tensors.front(), 4u);
  EXPECT_EQ(fusion_buffer_bytes(plan), 0u);
  check_round_trip(shapes, 0);
}

TEST(FusionPlan, LargeTensorsGoDirectBetweenPackedOnes) {
  const auto shapes = floats({10, 1 << 20, 20, 30});  // the 4 MiB tensor exceeds 64 KiB
  const auto plan = plan_fusion(shapes, 64 << 10);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].tensors, (std::vector<std::size_t>{0, 2, 3}));
  EXPECT_TRUE(plan[0].packed());
  EXPECT_EQ(plan[1].tensors, (std::vector<std::size_t>{1}));
  EXPECT_FALSE(plan[1].packed());
  check_round_trip(shapes, 64 << 10);
}

TEST(FusionPlan, DataTypesArePackedSeparatelyInCallOrder) {
  const std::vector<TensorShape> shapes{{3, DataType::kFloat16}, {5, DataType::kFloat64},
                                        {7, DataType::kFloat16}, {9, DataType::kUInt8},
                                        {2, DataType::kFloat64}, {4, DataType::kBFloat16}};
  const auto plan = plan_fusion(shapes, 4096);
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_EQ(plan[0].dtype, DataType::kFloat16);
  EXPECT_EQ(plan[0].tensors, (std::vector<std::size_t>{0, 2}));
  EXPECT_EQ(plan[1].dtype, DataType::kFloat64);
  EXPECT_EQ(plan[1].tensors, (std::vector<std::size_t>{1, 4}));
  EXPECT_EQ(plan[2].tensors, (std::vector<std::size_t>{3}));
  EXPECT_EQ(plan[3].tensors, (std::vector<std::size_t>{5}));
  check_round_trip(shapes, 4096);
}

TEST(FusionPlan, SameInputSamePlan) {
  std::vector<TensorShape> shapes;
  for (std::size_t i = 0; i < 300; ++i) {
    shapes.push_back({(i * 7919) % 5000, i % 3 == 0 ? DataType::kInt64 : DataType::kFloat32});
  }
  const auto a = plan_fusion(shapes, 64 << 10), b = plan_fusion(shapes, 64 << 10);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].tensors, b[i].tensors);
    EXPECT_EQ(a[i].offsets, b[i].offsets);
  }
  check_round_trip(shapes, 64 << 10);
}

}  // namespace
}  // namespace hvdrun::nccl
