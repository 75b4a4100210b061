// The fail-fast and restart-all policies (failure_policy.h).
#include "launcher/failure_policy.h"

namespace hvdrun::launcher {

WorkerEndDecision FailFastPolicy::on_worker_end(const WorkerId& /*worker*/, const ProcessEnd& end) {
  return end.success() ? WorkerEndDecision::kContinue : WorkerEndDecision::kTerminateJob;
}

WorkerEndDecision RestartAllPolicy::on_worker_end(const WorkerId& /*worker*/,
                                                  const ProcessEnd& end) {
  if (end.success()) return WorkerEndDecision::kContinue;
  if (restarts_ >= max_restarts_) return WorkerEndDecision::kTerminateJob;
  ++restarts_;
  return WorkerEndDecision::kRestartAll;
}

std::string RestartAllPolicy::exhausted() const {
  return "no restart left: --max-restarts " + std::to_string(max_restarts_) + " used";
}

WorkerEndDecision ElasticPolicy::on_worker_end(const WorkerId& /*worker*/, const ProcessEnd& end) {
  if (end.success()) return WorkerEndDecision::kContinue;
  if (reset_limit_ && resets_ >= *reset_limit_) {
    return WorkerEndDecision::kTerminateJob;
  }
  ++resets_;
  return WorkerEndDecision::kReform;
}

std::string ElasticPolicy::exhausted() const {
  return reset_limit_
             ? "no re-formation left: --reset-limit " + std::to_string(*reset_limit_) + " used"
             : std::string();
}

}  // namespace hvdrun::launcher
