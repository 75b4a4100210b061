// What the job does when a worker ends, behind an interface so that the policy can change
// without touching the supervisor's state machine: fail-fast (static jobs: the first worker
// that fails takes the job down) today; elastic and restart-all policies plug in here.
#pragma once

#include <memory>

#include "launcher/job_outcome.h"
#include "launcher/worker_id.h"

namespace hvdrun::launcher {

enum class WorkerEndDecision {
  kContinue,      // the job goes on (a worker that finished its work)
  kTerminateJob,  // this end is the job's failure: take every worker down
};

class FailurePolicy {
 public:
  virtual ~FailurePolicy() = default;
  virtual WorkerEndDecision on_worker_end(const WorkerId& worker, const ProcessEnd& end) = 0;
};

// Static jobs: a worker that exits non-zero, dies by a signal or cannot be started fails the
// job; one that exits 0 early is finished and the others go on.
class FailFastPolicy final : public FailurePolicy {
 public:
  WorkerEndDecision on_worker_end(const WorkerId& worker, const ProcessEnd& end) override;
};

}  // namespace hvdrun::launcher
