// What the job does when a worker ends, behind an interface so that the policy can change
// without touching the supervisor's state machine: fail-fast (static jobs: the first worker
// that fails takes the job down) and restart-all (--max-restarts: a failure stops every worker
// and starts them all again as a new generation, a limited number of times).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "launcher/job_outcome.h"
#include "launcher/worker_id.h"

namespace hvdrun::launcher {

enum class WorkerEndDecision {
  kContinue,      // the job goes on (a worker that finished its work)
  kTerminateJob,  // this end is the job's failure: take every worker down
  kRestartAll,    // stop every worker, then start them all again as a new generation
  kReform,        // the survivors re-form without this worker (an elastic job)
};

class FailurePolicy {
 public:
  virtual ~FailurePolicy() = default;
  virtual WorkerEndDecision on_worker_end(const WorkerId& worker, const ProcessEnd& end) = 0;
  // After kTerminateJob: the limit that made this failure the job's ("no restart left:
  // --max-restarts 2 used"); empty for fail-fast.
  virtual std::string exhausted() const { return {}; }
  // Failures the job went on after (restarts, re-formations).
  virtual int survived() const { return 0; }
};

// Static jobs: a worker that exits non-zero, dies by a signal or cannot be started fails the
// job; one that exits 0 early is finished and the others go on.
class FailFastPolicy final : public FailurePolicy {
 public:
  WorkerEndDecision on_worker_end(const WorkerId& worker, const ProcessEnd& end) override;
};

// --max-restarts N: the first failure of a generation restarts every worker while fewer than
// N restarts were made; after that, fail-fast.
class RestartAllPolicy final : public FailurePolicy {
 public:
  explicit RestartAllPolicy(int max_restarts) : max_restarts_(max_restarts) {}
  WorkerEndDecision on_worker_end(const WorkerId& worker, const ProcessEnd& end) override;
  std::string exhausted() const override;
  int survived() const override { return restarts_; }
  int restarts() const noexcept { return restarts_; }
  int max_restarts() const noexcept { return max_restarts_; }

 private:
  int max_restarts_;
  int restarts_ = 0;
};

// Elastic jobs (--min-np/--max-np): a failed worker is dropped and the survivors re-form, up
// to --reset-limit times (none: no limit); one that exits 0 is finished.
class ElasticPolicy final : public FailurePolicy {
 public:
  explicit ElasticPolicy(std::optional<int> reset_limit) : reset_limit_(reset_limit) {}
  WorkerEndDecision on_worker_end(const WorkerId& worker, const ProcessEnd& end) override;
  std::string exhausted() const override;
  int survived() const override { return resets_; }
  int resets() const noexcept { return resets_; }

 private:
  std::optional<int> reset_limit_;
  int resets_ = 0;
};

}  // namespace hvdrun::launcher
