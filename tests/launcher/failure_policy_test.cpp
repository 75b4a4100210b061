// The failure policies: which worker ends take a job down, restart it or re-form it, and
// the limit named when one ends it.
#include "launcher/failure_policy.h"

#include <gtest/gtest.h>
#include <signal.h>

namespace hvdrun::launcher {
namespace {

TEST(FailFastPolicy, OnlyASuccessfulEndLetsTheJobGoOn) {
  FailFastPolicy policy;
  const WorkerId worker{0, 1, 0};
  EXPECT_EQ(policy.on_worker_end(worker, {ProcessEnd::Kind::kExited, 0, {}}),
            WorkerEndDecision::kContinue);
  EXPECT_EQ(policy.on_worker_end(worker, {ProcessEnd::Kind::kExited, 3, {}}),
            WorkerEndDecision::kTerminateJob);
  EXPECT_EQ(policy.on_worker_end(worker, {ProcessEnd::Kind::kSignaled, SIGKILL, {}}),
            WorkerEndDecision::kTerminateJob);
  EXPECT_EQ(policy.on_worker_end(worker, ProcessEnd::lost_connection("lost connection")),
            WorkerEndDecision::kTerminateJob);
}

TEST(RestartAllPolicy, FailuresRestartUntilTheLimitThenFailTheJob) {
  RestartAllPolicy policy(2);
  const WorkerId worker{0, 1, 0};
  EXPECT_EQ(policy.on_worker_end(worker, ProcessEnd::exited(0)), WorkerEndDecision::kContinue);
  EXPECT_EQ(policy.on_worker_end(worker, ProcessEnd::exited(3)), WorkerEndDecision::kRestartAll);
  EXPECT_EQ(policy.on_worker_end(worker, ProcessEnd::signaled(SIGKILL)),
            WorkerEndDecision::kRestartAll);
  EXPECT_EQ(policy.restarts(), 2);
  EXPECT_EQ(policy.on_worker_end(worker, ProcessEnd::exited(3)), WorkerEndDecision::kTerminateJob);
  EXPECT_EQ(policy.restarts(), 2);
  EXPECT_EQ(policy.exhausted(), "no restart left: --max-restarts 2 used");
}

TEST(ElasticPolicy, FailuresReFormUntilTheResetLimitThenFailTheJob) {
  ElasticPolicy policy(1);
  const WorkerId worker{0, 1, 0};
  EXPECT_EQ(policy.on_worker_end(worker, ProcessEnd::exited(0)), WorkerEndDecision::kContinue);
  EXPECT_EQ(policy.on_worker_end(worker, ProcessEnd::exited(3)), WorkerEndDecision::kReform);
  EXPECT_EQ(policy.on_worker_end(worker, ProcessEnd::exited(3)), WorkerEndDecision::kTerminateJob);
  EXPECT_EQ(policy.exhausted(), "no re-formation left: --reset-limit 1 used");
  EXPECT_EQ(policy.survived(), 1);
  ElasticPolicy none(0);  // the first failure ends the job, and says why
  EXPECT_EQ(none.on_worker_end(worker, ProcessEnd::exited(3)), WorkerEndDecision::kTerminateJob);
  EXPECT_EQ(none.exhausted(), "no re-formation left: --reset-limit 0 used");
  EXPECT_EQ(none.survived(), 0);
  ElasticPolicy unlimited(std::nullopt);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(unlimited.on_worker_end(worker, ProcessEnd::exited(3)), WorkerEndDecision::kReform);
  }
  EXPECT_EQ(unlimited.exhausted(), "");
  EXPECT_EQ(FailFastPolicy().exhausted(), "");
}

}  // namespace
}  // namespace hvdrun::launcher
