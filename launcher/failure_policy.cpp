// The fail-fast policy (failure_policy.h).
#include "launcher/failure_policy.h"

namespace hvdrun::launcher {

WorkerEndDecision FailFastPolicy::on_worker_end(const WorkerId& /*worker*/, const ProcessEnd& end) {
  return end.success() ? WorkerEndDecision::kContinue : WorkerEndDecision::kTerminateJob;
}

}  // namespace hvdrun::launcher
