// Ring broadcast from every root, allgather with different counts per rank (zero too), and
// barrier ordering, with threads as ranks over 127.0.0.1.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "tests/worker-runtime/ring_harness.h"

namespace hvdrun {
namespace {

std::uint8_t pattern(int root, std::size_t i) {
  return static_cast<std::uint8_t>((i * 131 + static_cast<std::size_t>(root) * 17 + 5) % 251);
}

class RingBroadcast : public testing::TestWithParam<int> {};

TEST_P(RingBroadcast, EveryRootReachesEveryRank) {
  const int n = GetParam();
  auto rings = test::make_rings(n);
  const std::size_t counts[] = {0, 1, 4097, (1u << 20) + 3};  // the last spans many chunks
  const auto errors = test::run_ranks(n, [&](int r) {
    for (const std::size_t count : counts) {
      for (int root = 0; root < n; ++root) {
        std::vector<std::uint8_t> data(count, 0xee);
        if (r == root) {
          for (std::size_t i = 0; i < count; ++i) data[i] = pattern(root, i);
        }
        rings[r]->broadcast(data.data(), count, DataType::kUInt8, root);
        for (std::size_t i = 0; i < count; ++i) {
          if (data[i] != pattern(root, i)) {
            ADD_FAILURE() << "rank " << r << " root " << root << " count " << count << ": byte "
                          << i << " is " << int(data[i]);
            return;
          }
        }
      }
    }
    // Typed elements: float64 from the last rank.
    std::vector<double> values(1001, r == n - 1 ? 2.5 : -1.0);
    rings[r]->broadcast(values.data(), values.size(), DataType::kFloat64, n - 1);
    for (const double v : values) ASSERT_EQ(v, 2.5) << "rank " << r;
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[r], nullptr) << test::what(errors[r]);
}

INSTANTIATE_TEST_SUITE_P(Ranks, RingBroadcast, testing::Values(1, 2, 3, 5));

TEST(RingBroadcast, RootOutsideTheWorldIsAUsageErrorAndKeepsTheRing) {
  auto rings = test::make_rings(2);
  const auto errors = test::run_ranks(2, [&](int r) {
    std::int32_t v = r;
    EXPECT_THROW(rings[r]->broadcast(&v, 1, DataType::kInt32, 2), UsageError);
    rings[r]->broadcast(&v, 1, DataType::kInt32, 1);
    EXPECT_EQ(v, 1);
  });
  for (const auto& e : errors) EXPECT_EQ(e, nullptr) << test::what(e);
}

class RingAllgather : public testing::TestWithParam<int> {};

TEST_P(RingAllgather, ConcatenatesDifferentCountsInRankOrder) {
  const int n = GetParam();
  auto rings = test::make_rings(n);
  // Rank r contributes count(r) int32 values r*1000000 + i; rank 1 contributes none.
  const auto count = [](int r) -> std::size_t {
    return r == 1 ? 0 : static_cast<std::size_t>(r * 70001 + 3);
  };
  const auto errors = test::run_ranks(n, [&](int r) {
    std::vector<std::int32_t> mine(count(r));
    for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = r * 1000000 + static_cast<int>(i);
    std::vector<std::byte> out;
    const auto counts = rings[r]->allgather(mine.data(), mine.size(), DataType::kInt32, out);
    ASSERT_EQ(counts.size(), static_cast<std::size_t>(n));
    std::size_t total = 0;
    for (int k = 0; k < n; ++k) {
      ASSERT_EQ(counts[k], count(k)) << "rank " << r << " sees count of rank " << k;
      total += count(k);
    }
    ASSERT_EQ(out.size(), total * sizeof(std::int32_t));
    std::vector<std::int32_t> all(total);
    if (total > 0) std::memcpy(all.data(), out.data(), out.size());
    std::size_t at = 0;
    for (int k = 0; k < n; ++k) {
      for (std::size_t i = 0; i < count(k); ++i, ++at) {
        ASSERT_EQ(all[at], k * 1000000 + static_cast<int>(i)) << "rank " << r << " index " << at;
      }
    }
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[r], nullptr) << test::what(errors[r]);
}

INSTANTIATE_TEST_SUITE_P(Ranks, RingAllgather, testing::Values(1, 2, 3, 4, 7));

TEST(RingAllgather, AllEmptyAndOneRankOnly) {
  constexpr int n = 3;
  auto rings = test::make_rings(n);
  const auto errors = test::run_ranks(n, [&](int r) {
    std::vector<std::byte> out(5);
    auto counts = rings[r]->allgather(nullptr, 0, DataType::kFloat32, out);
    EXPECT_EQ(counts, (std::vector<std::size_t>{0, 0, 0}));
    EXPECT_TRUE(out.empty());
    // Only rank 2 has data: everyone still gets it.
    const float x[2] = {1.5f, -3.0f};
    counts = rings[r]->allgather(x, r == 2 ? 2 : 0, DataType::kFloat32, out);
    EXPECT_EQ(counts, (std::vector<std::size_t>{0, 0, 2}));
    ASSERT_EQ(out.size(), 2 * sizeof(float));
    EXPECT_EQ(std::memcmp(out.data(), x, sizeof(x)), 0);
  });
  for (const auto& e : errors) EXPECT_EQ(e, nullptr) << test::what(e);
}

class RingBarrier : public testing::TestWithParam<int> {};

// Ranks enter one after another; none may leave before the last has entered.
TEST_P(RingBarrier, NoRankLeavesBeforeAllEntered) {
  const int n = GetParam();
  auto rings = test::make_rings(n);
  std::atomic<int> entered{0};
  const auto errors = test::run_ranks(n, [&](int r) {
    for (int round = 0; round < 3; ++round) {
      // The entering order rotates so every rank is the late one sometime.
      const int delay = ((r + round) % n) * 20;
      std::this_thread::sleep_for(std::chrono::milliseconds(delay));
      entered.fetch_add(1);
      rings[r]->barrier();
      EXPECT_GE(entered.load(), n * (round + 1))
          << "rank " << r << " left barrier " << round << " early";
      rings[r]->barrier();  // keeps rounds apart
    }
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[r], nullptr) << test::what(errors[r]);
}

INSTANTIATE_TEST_SUITE_P(Ranks, RingBarrier, testing::Values(1, 2, 3, 6));

}  // namespace
}  // namespace hvdrun
