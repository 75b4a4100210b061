// Ring allreduce against a serial reference: 1..8 ranks as threads over 127.0.0.1, counts
// 0, 1, fewer than ranks, a prime and a multi-chunk count not divisible by the ranks, every
// data type and op, in place and out of place; plus 64 MiB of float32 on 2 and 4 ranks.
// Inputs are small integers (products: +-1, 2, 3), so every partial sum and product is exact
// in every type and results compare exactly whatever order the ring reduced in.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "tests/worker-runtime/ring_harness.h"
#include "worker-runtime/reduce.h"

namespace hvdrun {
namespace {

constexpr DataType kTypes[] = {DataType::kFloat32,  DataType::kFloat64, DataType::kFloat16,
                               DataType::kBFloat16, DataType::kInt32,   DataType::kInt64,
                               DataType::kUInt8};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax,
                             ReduceOp::kProduct};

void store(void* buffer, std::size_t i, DataType dtype, double v) {
  switch (dtype) {
    case DataType::kFloat32:
      static_cast<float*>(buffer)[i] = static_cast<float>(v);
      return;
    case DataType::kFloat64:
      static_cast<double*>(buffer)[i] = v;
      return;
    case DataType::kFloat16:
      static_cast<float16_t*>(buffer)[i] = to_float16(static_cast<float>(v));
      return;
    case DataType::kBFloat16:
      static_cast<bfloat16_t*>(buffer)[i] = to_bfloat16(static_cast<float>(v));
      return;
    case DataType::kInt32:
      static_cast<std::int32_t*>(buffer)[i] = static_cast<std::int32_t>(v);
      return;
    case DataType::kInt64:
      static_cast<std::int64_t*>(buffer)[i] = static_cast<std::int64_t>(v);
      return;
    case DataType::kUInt8:
      static_cast<std::uint8_t*>(buffer)[i] = static_cast<std::uint8_t>(v);
      return;
  }
}

double load(const void* buffer, std::size_t i, DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return static_cast<const float*>(buffer)[i];
    case DataType::kFloat64:
      return static_cast<const double*>(buffer)[i];
    case DataType::kFloat16:
      return to_float(static_cast<const float16_t*>(buffer)[i]);
    case DataType::kBFloat16:
      return to_float(static_cast<const bfloat16_t*>(buffer)[i]);
    case DataType::kInt32:
      return static_cast<const std::int32_t*>(buffer)[i];
    case DataType::kInt64:
      return static_cast<double>(static_cast<const std::int64_t*>(buffer)[i]);
    case DataType::kUInt8:
      return static_cast<const std::uint8_t*>(buffer)[i];
  }
  return 0;
}

// Rank r's element i: small integers, non-negative for uint8.
std::int64_t input(int r, std::size_t i, DataType dtype, ReduceOp op) {
  const bool unsigned_type = dtype == DataType::kUInt8;
  const auto k = static_cast<std::int64_t>(i);
  switch (op) {
    case ReduceOp::kProduct: {
      const std::int64_t v = (r * 5 + k) % 3;
      if (unsigned_type) return v + 1;
      return v == 0 ? 1 : (v == 1 ? 2 : -1);
    }
    case ReduceOp::kMin:
    case ReduceOp::kMax:
      return unsigned_type ? (r * 13 + k * 7) % 251 : (r * 13 + k * 7) % 17 - 8;
    default:
      return unsigned_type ? (r * 7 + k * 3) % 9 : (r * 7 + k * 3) % 9 - 4;
  }
}

// The serial reference, computed in int64 and converted once.
double reference(int n, std::size_t i, DataType dtype, ReduceOp op) {
  std::int64_t acc = input(0, i, dtype, op);
  for (int r = 1; r < n; ++r) {
    const std::int64_t v = input(r, i, dtype, op);
    switch (op) {
      case ReduceOp::kProduct:
        acc *= v;
        break;
      case ReduceOp::kMin:
        acc = std::min(acc, v);
        break;
      case ReduceOp::kMax:
        acc = std::max(acc, v);
        break;
      default:
        acc += v;
    }
  }
  if (dtype == DataType::kUInt8) acc &= 0xff;
  if (op != ReduceOp::kAverage) return static_cast<double>(acc);
  switch (dtype) {
    case DataType::kFloat64:
      return static_cast<double>(acc) / n;
    case DataType::kFloat32:
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return static_cast<float>(acc) / static_cast<float>(n);  // the ring divides in float
    default:
      return static_cast<double>(acc / n);  // integers truncate
  }
}

// Runs one allreduce on every rank of `rings` and checks every element; false on mismatch.
bool check_allreduce(tcp::Ring& ring, std::size_t count, DataType dtype, ReduceOp op,
                     bool in_place) {
  const int r = ring.rank(), n = ring.size();
  const std::size_t element = element_size(dtype);
  std::vector<std::byte> send(count * element + 1), recv(count * element + 1);
  for (std::size_t i = 0; i < count; ++i)
    store(send.data(), i, dtype, static_cast<double>(input(r, i, dtype, op)));
  void* out = in_place ? send.data() : recv.data();
  ring.allreduce(send.data(), out, count, dtype, op);
  std::vector<std::byte> expected(count * element + 1);
  for (std::size_t i = 0; i < count; ++i) {
    store(expected.data(), i, dtype, reference(n, i, dtype, op));
    if (load(out, i, dtype) != load(expected.data(), i, dtype)) {
      ADD_FAILURE() << "rank " << r << "/" << n << " " << to_string(dtype) << " " << to_string(op)
                    << (in_place ? " in place" : " out of place") << " count " << count
                    << ": element " << i << " is " << load(out, i, dtype) << ", expected "
                    << load(expected.data(), i, dtype);
      return false;
    }
  }
  if (!in_place) {  // the send buffer is left alone
    for (std::size_t i = 0; i < count; ++i) {
      if (load(send.data(), i, dtype) != static_cast<double>(input(r, i, dtype, op))) {
        ADD_FAILURE() << "rank " << r << ": send buffer changed at " << i;
        return false;
      }
    }
  }
  return true;
}

class RingAllreduce : public testing::TestWithParam<int> {};

TEST_P(RingAllreduce, MatchesSerialReferenceForEveryTypeAndOp) {
  const int n = GetParam();
  auto rings = test::make_rings(n);
  const std::size_t counts[] = {0, 1, 3, 10007, 3 * 65536 + 1};
  const auto errors = test::run_ranks(n, [&](int r) {
    for (const std::size_t count : counts) {
      for (const DataType dtype : kTypes) {
        for (const ReduceOp op : kOps) {
          if (!check_allreduce(*rings[r], count, dtype, op, true)) return;
          const bool small = count < 65536;
          if (small && !check_allreduce(*rings[r], count, dtype, op, false)) return;
        }
      }
    }
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[r], nullptr) << test::what(errors[r]);
}

INSTANTIATE_TEST_SUITE_P(Ranks, RingAllreduce, testing::Range(1, 9));

class RingAllreduceLarge : public testing::TestWithParam<int> {};

TEST_P(RingAllreduceLarge, SixtyFourMiBOfFloat32) {
  const int n = GetParam();
  constexpr std::size_t kCount = (64u << 20) / sizeof(float);
  auto rings = test::make_rings(n);
  const auto value = [](int r, std::size_t i) { return static_cast<float>(i % 7) - 3.0f + r; };
  const auto errors = test::run_ranks(n, [&](int r) {
    std::vector<float> send(kCount), recv(kCount);
    for (std::size_t i = 0; i < kCount; ++i) send[i] = value(r, i);
    const bool in_place = r % 2 == 0 && n == 4;  // mixed: a rank's choice is local
    float* out = in_place ? send.data() : recv.data();
    rings[r]->allreduce(send.data(), out, kCount, DataType::kFloat32, ReduceOp::kSum);
    for (std::size_t i = 0; i < kCount; ++i) {
      float expected = 0;
      for (int k = 0; k < n; ++k) expected += value(k, i);
      if (out[i] != expected) {
        ADD_FAILURE() << "rank " << r << ": element " << i << " is " << out[i] << ", expected "
                      << expected;
        return;
      }
    }
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[r], nullptr) << test::what(errors[r]);
}

INSTANTIATE_TEST_SUITE_P(Ranks, RingAllreduceLarge, testing::Values(2, 4));

}  // namespace
}  // namespace hvdrun
