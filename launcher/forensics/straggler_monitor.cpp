// StragglerMonitor (straggler_monitor.h).
#include "launcher/forensics/straggler_monitor.h"

#include "launcher/output/logging.h"

namespace hvdrun::launcher {
namespace {

constexpr std::size_t kShownInReports = 3;  // the latest ranks in the straggler lines

}  // namespace

StragglerMonitor::StragglerMonitor(const JobSpec& spec, Clock::time_point now)
    : report_(spec.straggler_report), said_(now), verbose_(spec.verbose) {
  if (spec.elastic.exclude_stragglers) watch_.emplace(spec.elastic.straggler_margin);
}

void StragglerMonitor::collectives_timed(const std::vector<CollectiveGroup>& groups) {
  for (const auto& group : groups) {
    stats_.add(group);
    if (watch_) watch_->add(group);
  }
  if (!watch_ || job_ == nullptr || !job_->generation_running()) return;
  const auto verdict = watch_->verdict();
  if (!verdict) return;
  // The generation it was found in, before the job re-forms without it.
  const std::uint32_t generation = job_->generation();
  if (job_->straggler_found(verdict->worker, verdict->describe())) {
    watch_->start_after(generation);  // a new window, in the next generation
  }
}

void StragglerMonitor::tick(Clock::time_point now) {
  if (report_.count() == 0 || now - said_ < report_) return;
  said_ = now;
  if (const std::string text = stats_.describe(kShownInReports); !text.empty()) note(text);
}

// The stragglers, when one was late by a millisecond or more (any with --verbose).
void StragglerMonitor::summarize() const {
  const auto rows = stats_.rows();
  if (!rows.empty() && (verbose_ || rows.front().median_us >= 1000)) {
    note(stats_.describe(kShownInReports));
  }
}

}  // namespace hvdrun::launcher
