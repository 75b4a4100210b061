// HangWatch (hang_watch.h).
#include "launcher/forensics/hang_watch.h"

#include "common/duration_text.h"
#include "launcher/forensics/stall_check.h"
#include "launcher/output/logging.h"
#include "launcher/policy/policy.h"

namespace hvdrun::launcher {

HangWatch::HangWatch(const JobSpec& spec)
    : warn_after_(spec.stall_timeout), shutdown_(spec.stall_shutdown) {}

void HangWatch::tick() {
  if (job_ == nullptr || (warn_after_.count() == 0 && !shutdown_)) return;
  job_->suspect(std::nullopt);
  if (!job_->generation_running() || shutting_down_) return;
  auto timeout = warn_after_;
  if (shutdown_ && (timeout.count() == 0 || *shutdown_ < timeout)) timeout = *shutdown_;
  const auto stall = find_stall(job_->progress(), timeout);
  if (!stall) return;
  job_->suspect(stall->culprits());
  if (shutdown_ && stall->waited >= *shutdown_) {
    shutting_down_ = true;
    const std::string reason = "stalled: " + stall->describe() + " (--stall-shutdown " +
                               describe_duration(*shutdown_) + ")";
    job_->collect_stacks("stall", stall->culprits(), [this, reason] {
      if (job_->generation_running()) job_->limit_reached(Limit::kStallShutdown, reason);
    });
    return;
  }
  const std::pair key{job_->generation(), stall->sequence};
  if (reported_ == key || warn_after_.count() == 0) return;
  reported_ = key;
  job_->happened("stall", {{"what", stall->describe()}});
  note("warning: stall: " + stall->describe());
}

}  // namespace hvdrun::launcher
