// float16 / bfloat16 conversions (known bit patterns, exhaustive round trips, ties to even
// at every midpoint), element sizes and names, and the reduction kernels.
#include "hvdrun/types.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "worker-runtime/reduce.h"

namespace hvdrun {
namespace {

std::uint16_t half_bits(float f) {
  return to_float16(f).bits;
}
std::uint16_t bf16_bits(float f) {
  return to_bfloat16(f).bits;
}

TEST(Float16, KnownBitPatterns) {
  EXPECT_EQ(half_bits(0.0f), 0x0000);
  EXPECT_EQ(half_bits(-0.0f), 0x8000);
  EXPECT_EQ(half_bits(1.0f), 0x3c00);
  EXPECT_EQ(half_bits(-2.0f), 0xc000);
  EXPECT_EQ(half_bits(0.1f), 0x2e66);
  EXPECT_EQ(half_bits(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(half_bits(65504.0f), 0x7bff);  // largest finite
  EXPECT_EQ(half_bits(65519.0f), 0x7bff);  // below the midpoint
  EXPECT_EQ(half_bits(65520.0f), 0x7c00);  // midpoint to 65536: ties to even = infinity
  EXPECT_EQ(half_bits(1e9f), 0x7c00);
  EXPECT_EQ(half_bits(-1e9f), 0xfc00);
  EXPECT_EQ(half_bits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(half_bits(0x1p-14f), 0x0400);           // smallest normal
  EXPECT_EQ(half_bits(0x1p-24f), 0x0001);           // smallest subnormal
  EXPECT_EQ(half_bits(0x1p-25f), 0x0000);           // tie between 0 and 2^-24: even is 0
  EXPECT_EQ(half_bits(0x1.8p-24f), 0x0002);         // tie between 1 and 2 ulps: even is 2
  EXPECT_EQ(half_bits(1.0f + 0x1p-11f), 0x3c00);    // tie: stays on even 1.0
  EXPECT_EQ(half_bits(1.0f + 0x1.8p-10f), 0x3c02);  // tie: rounds up to even
  const std::uint16_t nan = half_bits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
}

TEST(Float16, ToFloatKnownValues) {
  EXPECT_EQ(to_float(float16_t{0x3c00}), 1.0f);
  EXPECT_EQ(to_float(float16_t{0x0001}), 0x1p-24f);
  EXPECT_EQ(to_float(float16_t{0x03ff}), 1023 * 0x1p-24f);
  EXPECT_EQ(to_float(float16_t{0x7bff}), 65504.0f);
  EXPECT_EQ(to_float(float16_t{0xc000}), -2.0f);
  EXPECT_TRUE(std::signbit(to_float(float16_t{0x8000})));
  EXPECT_EQ(to_float(float16_t{0x7c00}), std::numeric_limits<float>::infinity());
  EXPECT_EQ(to_float(float16_t{0xfc00}), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(to_float(float16_t{0x7e00})));
  EXPECT_TRUE(std::isnan(to_float(float16_t{0x7c01})));
}

TEST(Float16, EveryPatternRoundTrips) {
  for (std::uint32_t b = 0; b <= 0xffff; ++b) {
    const float16_t h{static_cast<std::uint16_t>(b)};
    const float f = to_float(h);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(to_float(to_float16(f)))) << std::hex << b;
    } else {
      ASSERT_EQ(to_float16(f).bits, b) << std::hex << b;
    }
  }
}

// Between neighbours h and h+1, the exact midpoint goes to the even one and a float just
// off the midpoint goes to the nearer one; covers subnormals, normals and overflow.
TEST(Float16, MidpointsRoundToNearestEven) {
  for (std::uint32_t b = 0; b < 0x7c00; ++b) {
    const float lo = to_float(float16_t{static_cast<std::uint16_t>(b)});
    const float hi =
        b + 1 == 0x7c00 ? 65536.0f : to_float(float16_t{static_cast<std::uint16_t>(b + 1)});
    const float mid = (lo + hi) / 2;  // exact: 12 significant bits
    const std::uint32_t even = (b % 2 == 0) ? b : b + 1;
    ASSERT_EQ(half_bits(mid), even) << std::hex << b;
    ASSERT_EQ(half_bits(std::nextafter(mid, 0.0f)), b) << std::hex << b;
    ASSERT_EQ(half_bits(std::nextafter(mid, 1e30f)), b + 1) << std::hex << b;
    ASSERT_EQ(half_bits(-mid), even | 0x8000) << std::hex << b;
  }
}

TEST(BFloat16, KnownBitPatterns) {
  EXPECT_EQ(bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(bf16_bits(-2.0f), 0xc000);
  EXPECT_EQ(bf16_bits(1.0f + 0x1p-8f), 0x3f80);                     // tie: stays on even
  EXPECT_EQ(bf16_bits(1.0f + 0x1.8p-7f), 0x3f82);                   // tie: up to even
  EXPECT_EQ(bf16_bits(std::numeric_limits<float>::max()), 0x7f80);  // rounds to infinity
  EXPECT_EQ(bf16_bits(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(bf16_bits(std::bit_cast<float>(0x00010000u)), 0x0001);  // subnormal kept
  const std::uint16_t nan = bf16_bits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7f80, 0x7f80);
  EXPECT_NE(nan & 0x007f, 0);
  // A signalling NaN whose payload sits in the dropped bits must not become infinity.
  EXPECT_TRUE(std::isnan(to_float(to_bfloat16(std::bit_cast<float>(0x7f800001u)))));
  EXPECT_EQ(to_float(bfloat16_t{0x3f80}), 1.0f);
  EXPECT_EQ(to_float(bfloat16_t{0x7f80}), std::numeric_limits<float>::infinity());
}

TEST(BFloat16, EveryPatternRoundTripsAndMidpointsTieToEven) {
  for (std::uint32_t b = 0; b <= 0xffff; ++b) {
    const float f = to_float(bfloat16_t{static_cast<std::uint16_t>(b)});
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(to_float(to_bfloat16(f)))) << std::hex << b;
      continue;
    }
    ASSERT_EQ(bf16_bits(f), b) << std::hex << b;
    if ((b & 0x7fff) >= 0x7f7f) continue;  // the last finite step goes to infinity
    const float next = to_float(bfloat16_t{static_cast<std::uint16_t>(b + 1)});
    const float mid = f + (next - f) / 2;  // exact; (f + next) could overflow
    const std::uint32_t even = (b % 2 == 0) ? b : b + 1;
    ASSERT_EQ(bf16_bits(mid), even) << std::hex << b;
  }
}

TEST(Types, SizesAndNames) {
  EXPECT_EQ(element_size(DataType::kFloat32), 4u);
  EXPECT_EQ(element_size(DataType::kFloat64), 8u);
  EXPECT_EQ(element_size(DataType::kFloat16), 2u);
  EXPECT_EQ(element_size(DataType::kBFloat16), 2u);
  EXPECT_EQ(element_size(DataType::kInt32), 4u);
  EXPECT_EQ(element_size(DataType::kInt64), 8u);
  EXPECT_EQ(element_size(DataType::kUInt8), 1u);
  EXPECT_EQ(to_string(DataType::kBFloat16), "bfloat16");
  EXPECT_EQ(to_string(DataType::kUInt8), "uint8");
  EXPECT_EQ(to_string(ReduceOp::kAverage), "average");
  EXPECT_EQ(to_string(ReduceOp::kProduct), "product");
}

TEST(Reduce, KernelsApplyTheOperation) {
  std::vector<std::int32_t> a{1, -5, 7}, b{4, 2, -9};
  auto x = a;
  reduce_into(x.data(), b.data(), 3, DataType::kInt32, ReduceOp::kSum);
  EXPECT_EQ(x, (std::vector<std::int32_t>{5, -3, -2}));
  x = a;
  reduce_into(x.data(), b.data(), 3, DataType::kInt32, ReduceOp::kMin);
  EXPECT_EQ(x, (std::vector<std::int32_t>{1, -5, -9}));
  x = a;
  reduce_into(x.data(), b.data(), 3, DataType::kInt32, ReduceOp::kMax);
  EXPECT_EQ(x, (std::vector<std::int32_t>{4, 2, 7}));
  x = a;
  reduce_into(x.data(), b.data(), 3, DataType::kInt32, ReduceOp::kProduct);
  EXPECT_EQ(x, (std::vector<std::int32_t>{4, -10, -63}));
  divide(x.data(), 3, DataType::kInt32, 2);
  EXPECT_EQ(x, (std::vector<std::int32_t>{2, -5, -31}));  // truncation toward zero

  std::vector<std::uint8_t> u{200, 3}, v{100, 4};
  reduce_into(u.data(), v.data(), 2, DataType::kUInt8, ReduceOp::kSum);
  EXPECT_EQ(u, (std::vector<std::uint8_t>{44, 7}));  // wraps modulo 256
  divide(u.data(), 2, DataType::kUInt8, 300);
  EXPECT_EQ(u, (std::vector<std::uint8_t>{0, 0}));

  std::vector<float16_t> h{to_float16(1.5f), to_float16(-2.0f)};
  const std::vector<float16_t> g{to_float16(2.25f), to_float16(8.0f)};
  std::vector<float16_t> out(2);
  combine(out.data(), h.data(), g.data(), 2, DataType::kFloat16, ReduceOp::kSum);
  EXPECT_EQ(to_float(out[0]), 3.75f);
  EXPECT_EQ(to_float(out[1]), 6.0f);
  combine(out.data(), h.data(), g.data(), 2, DataType::kFloat16, ReduceOp::kMin);
  EXPECT_EQ(to_float(out[0]), 1.5f);
  EXPECT_EQ(to_float(out[1]), -2.0f);
  std::vector<bfloat16_t> bf{to_bfloat16(3.0f)}, bg{to_bfloat16(-0.5f)};
  reduce_into(bf.data(), bg.data(), 1, DataType::kBFloat16, ReduceOp::kProduct);
  EXPECT_EQ(to_float(bf[0]), -1.5f);
  divide(bf.data(), 1, DataType::kBFloat16, 3);
  EXPECT_EQ(to_float(bf[0]), -0.5f);

  std::vector<double> d{1.0, 2.0}, e{0.5, -4.0};
  reduce_into(d.data(), e.data(), 2, DataType::kFloat64, ReduceOp::kMax);
  EXPECT_EQ(d, (std::vector<double>{1.0, 2.0}));
}

}  // namespace
}  // namespace hvdrun
