// The NCCL communicator plan of an elastic generation (nccl/comm_plan.h): shrink only when the
// new generation is exactly the survivors, in order, on their devices, with a live communicator
// and an NCCL that can shrink; otherwise a new communicator, with the reason.
#include "worker-runtime/nccl/comm_plan.h"

#include <gtest/gtest.h>

#include <vector>

namespace hvdrun::nccl {
namespace {

// A survivor of generation 3 (size 4) that had rank `old_rank` on `device`.
MemberComm survivor(int old_rank, int device = 0, std::uint32_t generation = 3) {
  MemberComm m;
  m.has_previous = true;
  m.device = device;
  m.has_shrink = true;
  m.nccl_version = 22809;
  m.generation = generation;
  m.rank = old_rank;
  m.size = 4;
  m.previous_device = device;
  m.alive = true;
  return m;
}

MemberComm newcomer() {
  MemberComm m;
  m.device = 1;
  m.has_shrink = true;
  m.nccl_version = 22809;
  return m;
}

TEST(CommPlan, SurvivorsOnlyShrinkWithoutTheLostRanks) {
  const std::vector<MemberComm> members{survivor(0, 0), survivor(2, 2), survivor(3, 3)};
  const CommPlan plan = plan_communicator(members);
  EXPECT_TRUE(plan.shrink) << plan.reason;
  EXPECT_EQ(plan.excluded, std::vector<int>{1});
  EXPECT_EQ(plan.reason,
            "shrinking the communicator of generation 3 from 4 to 3 ranks (without old rank(s) 1)");
}

// The job's first generation is number 0: its survivors shrink like any others.
TEST(CommPlan, SurvivorsOfTheFirstGenerationShrink) {
  const std::vector<MemberComm> members{survivor(0, 0, 0), survivor(1, 1, 0), survivor(3, 3, 0)};
  const CommPlan plan = plan_communicator(members);
  EXPECT_TRUE(plan.shrink) << plan.reason;
  EXPECT_EQ(plan.excluded, std::vector<int>{2});
}

TEST(CommPlan, LosingRankZeroAndTheLastShrinksToo) {
  const std::vector<MemberComm> members{survivor(1, 1), survivor(2, 2)};
  const CommPlan plan = plan_communicator(members);
  ASSERT_TRUE(plan.shrink) << plan.reason;
  EXPECT_EQ(plan.excluded, (std::vector<int>{0, 3}));
}

TEST(CommPlan, FirstGenerationIsNew) {
  const std::vector<MemberComm> members{newcomer(), newcomer()};
  const CommPlan plan = plan_communicator(members);
  EXPECT_FALSE(plan.shrink);
  EXPECT_EQ(plan.reason, "new communicator: no rank has one yet");
}

TEST(CommPlan, ANewcomerMeansANewCommunicator) {
  const std::vector<MemberComm> members{survivor(0), survivor(1), newcomer()};
  const CommPlan plan = plan_communicator(members);
  EXPECT_FALSE(plan.shrink);
  EXPECT_EQ(plan.reason, "new communicator: rank(s) 2 joined");
  EXPECT_TRUE(plan.excluded.empty());
}

TEST(CommPlan, AnNcclWithoutShrinkIsNamed) {
  std::vector<MemberComm> members{survivor(0), survivor(1)};
  members[1].has_shrink = false;
  members[1].nccl_version = 22603;
  const CommPlan plan = plan_communicator(members);
  EXPECT_FALSE(plan.shrink);
  EXPECT_EQ(plan.reason,
            "new communicator: rank 1's NCCL 2.26.3 has no ncclCommShrink (NCCL 2.27 or later)");
}

TEST(CommPlan, AnAbortedCommunicatorCannotBeShrunk) {
  std::vector<MemberComm> members{survivor(0), survivor(1), survivor(3)};
  members[2].alive = false;
  const CommPlan plan = plan_communicator(members);
  EXPECT_FALSE(plan.shrink);
  EXPECT_EQ(plan.reason,
            "new communicator: the communicator of rank(s) 2 was aborted (NCCL error or timeout)");
}

TEST(CommPlan, ARankOnAnotherDeviceNeedsANewCommunicator) {
  std::vector<MemberComm> members{survivor(0, 0), survivor(2, 2)};
  members[1].device = 1;  // its local rank changed
  const CommPlan plan = plan_communicator(members);
  EXPECT_FALSE(plan.shrink);
  EXPECT_EQ(plan.reason, "new communicator: rank 1 moves from device 2 to 1");
}

TEST(CommPlan, ReorderedSurvivorsNeedANewCommunicator) {
  // ncclCommShrink keeps the old order; ranks 0 and 1 swapped would get each other's rank.
  const std::vector<MemberComm> members{survivor(2), survivor(0)};
  const CommPlan plan = plan_communicator(members);
  EXPECT_FALSE(plan.shrink);
  EXPECT_EQ(plan.reason, "new communicator: the survivors' ranks are not in their earlier order");
}

TEST(CommPlan, MixedGenerationsNeedANewCommunicator) {
  std::vector<MemberComm> members{survivor(0), survivor(1)};
  members[1].generation = 2;
  EXPECT_EQ(plan_communicator(members).reason,
            "new communicator: rank(s) 1 come from another communicator");
  members[1].generation = 3;
  members[1].size = 5;
  EXPECT_FALSE(plan_communicator(members).shrink);
}

TEST(CommPlan, TheSameMembersKeepNothingToShrink) {
  const std::vector<MemberComm> members{survivor(0), survivor(1), survivor(2), survivor(3)};
  const CommPlan plan = plan_communicator(members);
  EXPECT_FALSE(plan.shrink);
  EXPECT_EQ(plan.reason, "new communicator: no rank left generation 3");
}

TEST(CommPlan, ARankOutsideItsOldCommunicatorIsRefused) {
  std::vector<MemberComm> members{survivor(0), survivor(1)};
  members[1].rank = 4;  // size 4: no such rank
  EXPECT_FALSE(plan_communicator(members).shrink);
}

}  // namespace
}  // namespace hvdrun::nccl
