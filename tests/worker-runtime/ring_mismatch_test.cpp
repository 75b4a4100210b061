// Collectives that do not match across ranks fail on every rank, naming both sides, instead of
// returning wrong data: another type with the same byte count, another operation, another
// kind, different broadcast roots (after which nothing can return stale bytes), and one call
// more on one rank. With a failure board (as in a job), ranks that saw only a closed link
// name the mismatch too.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "hvdrun/error.h"
#include "tests/worker-runtime/ring_harness.h"

namespace hvdrun {
namespace {

using std::chrono::milliseconds;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Runs calls[r] on rank r of n rings sharing a board; returns each rank's error message and
// whether it was a MismatchError.
struct Outcome {
  std::vector<std::string> messages;
  std::vector<char> mismatch;  // not vector<bool>: each rank's thread writes its own element
};

Outcome run(int n, const std::vector<std::function<void(tcp::Ring&)>>& calls) {
  auto board = std::make_shared<test::LocalFailureBoard>();
  auto rings = test::make_rings(n, milliseconds(5000), 0, board);
  Outcome out{std::vector<std::string>(n), std::vector<char>(n, 0)};
  test::run_ranks(n, [&](int r) {
    try {
      calls[r](*rings[r]);
      out.messages[r] = "(no error)";
    } catch (const MismatchError& e) {
      out.messages[r] = e.what();
      out.mismatch[r] = true;
    } catch (const std::exception& e) {
      out.messages[r] = e.what();
    }
  });
  return out;
}

std::function<void(tcp::Ring&)> allreduce_of(DataType dtype, std::size_t count,
                                             ReduceOp op = ReduceOp::kSum) {
  return [=](tcp::Ring& ring) {
    std::vector<std::byte> data(count * element_size(dtype));
    ring.allreduce(data.data(), data.data(), count, dtype, op);
  };
}

// Every rank's error holds `text`; a rank that compared the descriptors itself throws a
// MismatchError, the others (their links closed first) name it through the failure board.
void expect_everywhere(const Outcome& out, const std::string& text) {
  int detected = 0;
  for (std::size_t r = 0; r < out.messages.size(); ++r) {
    EXPECT_TRUE(contains(out.messages[r], text)) << "rank " << r << ": " << out.messages[r];
    if (out.mismatch[r]) ++detected;
  }
  EXPECT_GE(detected, 1);
}

TEST(RingMismatch, SameBytesAnotherTypeFailsOnBothRanks) {
  for (const std::size_t scale : {std::size_t{1}, std::size_t{1000}}) {  // small and ring path
    const auto out = run(2, {allreduce_of(DataType::kFloat32, 2000 * scale),
                             allreduce_of(DataType::kFloat64, 1000 * scale)});
    const std::string text = "allreduce #1: rank 0 called allreduce(float32, sum, " +
                             std::to_string(2000 * scale) +
                             " elements) but rank 1 called allreduce(float64, sum, " +
                             std::to_string(1000 * scale) + " elements)";
    expect_everywhere(out, text);
  }
}

TEST(RingMismatch, EveryRankOfFourNamesTheMismatch) {
  // Rank 2 alone differs: ranks 2 and 3 see it themselves, ranks 0 and 1 through the board.
  const auto sum = allreduce_of(DataType::kInt32, 100, ReduceOp::kSum);
  const auto out = run(4, {sum, sum, allreduce_of(DataType::kInt32, 100, ReduceOp::kMax), sum});
  for (int r = 0; r < 4; ++r) {
    EXPECT_TRUE(contains(out.messages[r], "allreduce(int32, sum, 100 elements)") &&
                contains(out.messages[r], "allreduce(int32, max, 100 elements)"))
        << "rank " << r << ": " << out.messages[r];
  }
  EXPECT_TRUE(out.mismatch[2] || out.mismatch[3]) << out.messages[2] << "\n" << out.messages[3];
}

TEST(RingMismatch, BroadcastAgainstAllreduceFails) {
  const auto out = run(2, {[](tcp::Ring& ring) {
                             std::vector<float> data(64);
                             ring.broadcast(data.data(), data.size(), DataType::kFloat32, 0);
                           },
                           allreduce_of(DataType::kFloat32, 64)});
  expect_everywhere(out,
                    "rank 0 called broadcast(float32, 64 elements, root 0) but rank 1 called "
                    "allreduce(float32, sum, 64 elements)");
}

// Each rank believes it is the root: before, both "succeeded" and the bytes each sent were
// taken by the next collective. Now the broadcast fails and no later call runs on the ring.
TEST(RingMismatch, DifferentBroadcastRootsFailAndLeaveNothingBehind) {
  const auto as_root = [](int root) {
    return [root](tcp::Ring& ring) {
      std::vector<std::int64_t> data(16, root + 1);
      ring.broadcast(data.data(), data.size(), DataType::kInt64, root);
      ADD_FAILURE() << "the broadcast with root " << root << " returned";
    };
  };
  const auto out = run(2, {as_root(0), as_root(1)});
  expect_everywhere(out,
                    "broadcast #1: rank 0 called broadcast(int64, 16 elements, root 0) but rank 1 "
                    "called broadcast(int64, 16 elements, root 1)");
}

TEST(RingMismatch, OneCallMoreOnOneRankIsCaughtAtTheNextCall) {
  const auto out =
      run(2, {[](tcp::Ring& ring) {
                std::vector<float> a(8), b(8);
                ring.allreduce(a.data(), a.data(), 8, DataType::kFloat32, ReduceOp::kSum);
                ring.allreduce(b.data(), b.data(), 8, DataType::kFloat32, ReduceOp::kSum);
              },
              [](tcp::Ring& ring) {
                std::vector<float> a(8);
                ring.allreduce(a.data(), a.data(), 8, DataType::kFloat32, ReduceOp::kSum);
                ring.barrier();
              }});
  expect_everywhere(out,
                    "#2: rank 0 called allreduce(float32, sum, 8 elements) but rank 1 called "
                    "barrier()");
}

// A call with nothing to reduce still takes its place: rank 0's empty allreduce then a real
// one against rank 1's two real ones would otherwise pair rank 0's second call with rank 1's
// first and combine unrelated data.
TEST(RingMismatch, AnEmptyCallStillCounts) {
  const auto out =
      run(2, {[](tcp::Ring& ring) {
                std::vector<float> v(100, 1.0f);
                ring.allreduce(v.data(), v.data(), 0, DataType::kFloat32, ReduceOp::kSum);
                ring.allreduce(v.data(), v.data(), 100, DataType::kFloat32, ReduceOp::kSum);
              },
              [](tcp::Ring& ring) {
                std::vector<float> v(100, 1.0f);
                ring.allreduce(v.data(), v.data(), 100, DataType::kFloat32, ReduceOp::kSum);
                ring.allreduce(v.data(), v.data(), 100, DataType::kFloat32, ReduceOp::kSum);
              }});
  expect_everywhere(out,
                    "allreduce #1: rank 0 called allreduce(float32, sum, 0 elements) but rank 1 "
                    "called allreduce(float32, sum, 100 elements)");
}

// HVDRUN_CHECK_COLLECTIVES's check before a device call: descriptors only, no data.
TEST(RingMismatch, DeviceCallDescriptorsAreComparedOnTheRing) {
  const auto call = [](ReduceOp op, std::size_t count) {
    return [=](tcp::Ring& ring) {
      ring.check_call(tcp::CollectiveKind::kReduceScatter, DataType::kFloat16, op, count, 0);
      ring.check_call(tcp::CollectiveKind::kAllreduceMany, DataType::kUInt8, op, 12, 0);
    };
  };
  auto out = run(3, {call(ReduceOp::kSum, 8), call(ReduceOp::kSum, 8), call(ReduceOp::kSum, 8)});
  for (int r = 0; r < 3; ++r) EXPECT_EQ(out.messages[r], "(no error)");
  out = run(2, {call(ReduceOp::kSum, 8), call(ReduceOp::kSum, 16)});
  expect_everywhere(out,
                    "reduce_scatter #1: rank 0 called reduce_scatter(float16, sum, 8 elements) but "
                    "rank 1 called reduce_scatter(float16, sum, 16 elements)");
}

TEST(RingMismatch, MatchingCallsStillAgreeAfterManyCollectives) {
  const auto body = [](tcp::Ring& ring) {
    for (int i = 0; i < 50; ++i) {
      std::vector<double> v(3 + i, 1.0);
      ring.allreduce(v.data(), v.data(), v.size(), DataType::kFloat64, ReduceOp::kSum);
      if (v[0] != 3.0) throw std::runtime_error("wrong sum");
      ring.broadcast(v.data(), v.size(), DataType::kFloat64, i % 3);
      std::vector<std::byte> out;
      ring.allgather(v.data(), static_cast<std::size_t>(ring.rank() + 1), DataType::kFloat64, out);
      ring.barrier();
    }
  };
  const auto out = run(3, {body, body, body});
  for (int r = 0; r < 3; ++r) EXPECT_EQ(out.messages[r], "(no error)");
}

}  // namespace
}  // namespace hvdrun
