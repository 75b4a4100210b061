// The job's state machine: the transitions it allows, and those it refuses (the state stays).
#include "launcher/job/job_state.h"

#include <gtest/gtest.h>

#include <vector>

namespace hvdrun::launcher {
namespace {

using S = JobState;

TEST(JobStateMachine, StartsConnectingAndFollowsAJobThroughItsLife) {
  JobStateMachine machine;
  EXPECT_TRUE(machine.is(S::kConnecting));
  EXPECT_FALSE(machine.active());
  for (S next : {S::kRunning, S::kWaitingForSlots, S::kRunning, S::kRestarting, S::kRunning,
                 S::kTerminating, S::kDraining, S::kFinished}) {
    EXPECT_TRUE(machine.enter(next)) << state_name(next);
    EXPECT_EQ(machine.state(), next);
  }
}

TEST(JobStateMachine, RefusesTransitionsTheTableDoesNotAllowAndStaysWhereItIs) {
  struct Case {
    S from;
    S to;
  };
  const std::vector<Case> refused = {
      {S::kConnecting, S::kWaitingForSlots}, {S::kConnecting, S::kTerminating},
      {S::kConnecting, S::kConnecting},      {S::kRunning, S::kRunning},
      {S::kRunning, S::kConnecting},         {S::kWaitingForSlots, S::kWaitingForSlots},
      {S::kWaitingForSlots, S::kDraining},   {S::kRestarting, S::kWaitingForSlots},
      {S::kRestarting, S::kDraining},        {S::kTerminating, S::kRunning},
      {S::kTerminating, S::kRestarting},     {S::kDraining, S::kRunning},
      {S::kDraining, S::kTerminating},       {S::kFinished, S::kRunning},
      {S::kFinished, S::kFinished},
  };
  for (const auto& c : refused) {
    EXPECT_FALSE(JobStateMachine::allowed(c.from, c.to))
        << state_name(c.from) << " -> " << state_name(c.to);
  }
  JobStateMachine machine;
  ASSERT_TRUE(machine.enter(S::kRunning));
  ASSERT_TRUE(machine.enter(S::kTerminating));
  EXPECT_FALSE(machine.enter(S::kRunning));
  EXPECT_TRUE(machine.is(S::kTerminating));
  ASSERT_TRUE(machine.enter(S::kFinished));
  EXPECT_FALSE(machine.enter(S::kDraining));
  EXPECT_TRUE(machine.is(S::kFinished));
}

TEST(JobStateMachine, WaitingForSlotsIsActiveAsRunningIs) {
  JobStateMachine machine;
  machine.enter(S::kRunning);
  EXPECT_TRUE(machine.active());
  machine.enter(S::kWaitingForSlots);
  EXPECT_TRUE(machine.active());
  machine.enter(S::kRestarting);
  EXPECT_FALSE(machine.active());
}

}  // namespace
}  // namespace hvdrun::launcher
