// Integration: ranks of a real job that call collectives that do not match fail, naming both
// sides, instead of exchanging bytes that mean something else and exiting 0.
#include <gtest/gtest.h>

#include <string>

#include "tests/integration/hvdrun_runner.h"

namespace hvdrun::itest {
namespace {

using std::chrono::seconds;

TEST(Mismatch, SameBytesAnotherTypeFailsTheJobNamingBothRanks) {
  const auto r =
      run_hvdrun({"-np", "2", "-x", "ITEST_CALL_0=f32", "-x", "ITEST_CALL_1=f64", MISMATCH_WORKER},
                 {}, seconds(60));
  EXPECT_EQ(r.status, 5) << r.err;
  EXPECT_FALSE(contains(r.out, "allreduce gave")) << r.out;
  const std::string text =
      "allreduce #1: rank 0 called allreduce(float32, sum, 2000 elements) but rank 1 called "
      "allreduce(float64, sum, 1000 elements)";
  // The first rank to fail names it, and so does hvdrun's summary of that rank: rank 1, which
  // saw the mismatch (a MismatchError), or rank 0, to which rank 1 reported it before it ended
  // (the same words, as rank 1's failure); the other may be stopped before it prints (every
  // rank's message: ring_mismatch_test).
  const auto summary = r.err.find("hvdrun: last stderr lines of rank ");
  ASSERT_NE(summary, std::string::npos) << r.err;
  EXPECT_NE(r.err.find(text, summary), std::string::npos) << r.err;
}

TEST(Mismatch, DifferentBroadcastRootsFailInsteadOfPoisoningTheNextCall) {
  const auto r = run_hvdrun({"-np", "3", "-x", "ITEST_CALL_0=root0", "-x", "ITEST_CALL_1=root0",
                             "-x", "ITEST_CALL_2=root2", MISMATCH_WORKER},
                            {}, seconds(60));
  EXPECT_EQ(r.status, 5) << r.err;
  EXPECT_FALSE(contains(r.out, "then allreduce gave")) << r.out;
  EXPECT_TRUE(contains(r.err, "but rank 2 called broadcast(int64, 16 elements, root 2)")) << r.err;
}

TEST(Mismatch, MatchingCallsRunAsBefore) {
  const auto r = run_hvdrun({"-np", "3", "-x", "ITEST_CALL_0=root1", "-x", "ITEST_CALL_1=root1",
                             "-x", "ITEST_CALL_2=root1", MISMATCH_WORKER},
                            {}, seconds(60));
  EXPECT_EQ(r.status, 0) << r.err;
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_TRUE(contains(r.out, "[" + std::to_string(rank) + "]<stdout>:broadcast gave 101"))
        << r.out;
    EXPECT_TRUE(contains(r.out, "[" + std::to_string(rank) + "]<stdout>:then allreduce gave 3"))
        << r.out;
  }
}

}  // namespace
}  // namespace hvdrun::itest
