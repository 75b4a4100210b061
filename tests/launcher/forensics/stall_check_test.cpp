// find_stall(): which collective waits too long, on whom, and the line that says so.
#include "launcher/forensics/stall_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hvdrun::launcher {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;

rdzv::MemberProgress member(int rank, std::optional<rdzv::ProgressReport> report,
                            milliseconds age = milliseconds(200)) {
  rdzv::MemberProgress m;
  m.worker = static_cast<std::uint32_t>(rank);
  m.rank = rank;
  m.host = "node" + std::to_string(rank / 2);
  m.pid = 4000 + static_cast<std::uint32_t>(rank);
  m.report = std::move(report);
  m.age = age;
  return m;
}

rdzv::ProgressReport in(std::uint32_t seq, std::uint32_t ms) {
  return {seq, seq - 1, ms, ms + 10, "allreduce (float32, 4.0 MiB)"};
}

rdzv::ProgressReport done(std::uint32_t seq, std::uint32_t ago_ms) {
  return {seq, seq, 5, ago_ms, "allreduce (float32, 4.0 MiB)"};
}

TEST(StallCheck, NamesTheRankThatHasNotEnteredTheCollective) {
  std::vector<rdzv::MemberProgress> members;
  for (int r = 0; r < 8; ++r)
    members.push_back(member(r, r == 3 ? done(1233, 60'800) : in(1234, 59'900)));
  const auto stall = find_stall(members, milliseconds(60'000));
  ASSERT_TRUE(stall);
  EXPECT_EQ(stall->sequence, 1234u);
  EXPECT_EQ(stall->waiting.size(), 7u);
  EXPECT_THAT(stall->culprits(), ElementsAre(3));
  EXPECT_EQ(stall->describe(),
            "allreduce #1234 (float32, 4.0 MiB) waits 60 s on 7 of 8 ranks; rank 3 (host node1, "
            "pid 4003) has not entered it: its last collective, #1233, ended 61 s ago");
}

TEST(StallCheck, NothingBelowTheTimeoutOrWithoutReports) {
  EXPECT_FALSE(find_stall({member(0, in(5, 1000)), member(1, done(4, 1000))}, milliseconds(2000)));
  EXPECT_FALSE(find_stall({member(0, std::nullopt), member(1, std::nullopt)}, milliseconds(1)));
  EXPECT_FALSE(find_stall({}, milliseconds(1)));
  // Every rank through its last collective: computing, not stalled.
  EXPECT_FALSE(
      find_stall({member(0, done(9, 90'000)), member(1, done(9, 90'000))}, milliseconds(1000)));
}

TEST(StallCheck, ARankStuckInAnEarlierCollectiveOrSilentIsNamedAsSuch) {
  const auto stall =
      find_stall({member(0, in(7, 5000)), member(1, in(6, 5100)), member(2, std::nullopt)},
                 milliseconds(3000));
  ASSERT_TRUE(stall);
  EXPECT_THAT(stall->culprits(), ElementsAre(1, 2));
  EXPECT_THAT(stall->describe(),
              ::testing::HasSubstr("rank 1 (host node0, pid 4001) has not entered it: it waits "
                                   "in allreduce #6 (float32, 4.0 MiB) since 5 s ago; rank 2 "
                                   "(host node1, pid 4002) has not entered it: it has not "
                                   "entered any collective of this generation"));
}

TEST(StallCheck, EveryRankInsideItSaysSo) {
  const auto stall = find_stall({member(0, in(2, 4000)), member(1, in(2, 4000))}, milliseconds(1));
  ASSERT_TRUE(stall);
  EXPECT_THAT(stall->culprits(), ElementsAre(0, 1));
  EXPECT_EQ(stall->describe(),
            "allreduce #2 (float32, 4.0 MiB) waits 4 s on 2 of 2 ranks; every rank entered it (a "
            "transfer does not progress)");
}

TEST(StallCheck, ManyMissingRanksAreCounted) {
  std::vector<rdzv::MemberProgress> members{member(0, in(3, 9000))};
  for (int r = 1; r < 20; ++r) members.push_back(member(r, done(2, 9000)));
  const auto stall = find_stall(members, milliseconds(1000));
  ASSERT_TRUE(stall);
  EXPECT_EQ(stall->culprits().size(), 19u);
  EXPECT_THAT(stall->describe(), ::testing::EndsWith("; and 11 more ranks"));
}

}  // namespace
}  // namespace hvdrun::launcher
