// HangWatch: the stall check, as a component on a job's events (job_events.h). Every tick (a
// second) it asks what the members of the running generation last said of their collectives
// (stall_check.h): a collective waiting past --stall-timeout is said once, its ranks are the
// job's suspects for Ctrl-\ and Ctrl-C, and past --stall-shutdown the ranks' stacks are
// collected and the job's policy ends the job. io thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>

#include "launcher/job/job_events.h"
#include "launcher/spec/job_spec.h"

namespace hvdrun::launcher {

class HangWatch final : public JobEvents {
 public:
  explicit HangWatch(const JobSpec& spec);

  void attached(JobControl& job) override { job_ = &job; }
  void tick() override;

 private:
  std::chrono::milliseconds warn_after_;               // --stall-timeout (0: no warning)
  std::optional<std::chrono::milliseconds> shutdown_;  // --stall-shutdown
  std::optional<std::pair<std::uint32_t, std::uint32_t>> reported_;  // generation, #
  bool shutting_down_ = false;  // the stacks are being collected, then the job ends
  JobControl* job_ = nullptr;
};

}  // namespace hvdrun::launcher
