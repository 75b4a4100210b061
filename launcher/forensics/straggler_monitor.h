// StragglerMonitor: the stragglers of a job, as a component on its events (job_events.h): the
// collectives every member timed feed the straggler statistics (stragglers.h), said every
// --straggler-report and in the summary, and with --exclude-stragglers the watch
// (straggler_watch.h) whose verdict the job's policy takes up (JobControl::straggler_found).
// io thread only.
#pragma once

#include <chrono>
#include <optional>

#include "launcher/forensics/straggler_watch.h"
#include "launcher/forensics/stragglers.h"
#include "launcher/job/job_events.h"
#include "launcher/spec/job_spec.h"

namespace hvdrun::launcher {

class StragglerMonitor final : public JobEvents {
 public:
  // `now`: the time the reports count from (the clock is the caller's: tests pass their own).
  StragglerMonitor(const JobSpec& spec, Clock::time_point now);

  void attached(JobControl& job) override { job_ = &job; }
  void collectives_timed(const std::vector<CollectiveGroup>& groups) override;
  void tick() override { tick(Clock::now()); }
  void summarize() const override;

  // tick() at `now`: the report, if --straggler-report's interval has passed.
  void tick(Clock::time_point now);
  const StragglerStats& stats() const noexcept { return stats_; }

 private:
  StragglerStats stats_;
  std::optional<StragglerWatch> watch_;  // --exclude-stragglers
  std::chrono::milliseconds report_;     // --straggler-report (0: none)
  Clock::time_point said_;               // the last report
  bool verbose_;
  JobControl* job_ = nullptr;
};

}  // namespace hvdrun::launcher
