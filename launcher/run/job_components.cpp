// job_components (job_components.h).
#include "launcher/run/job_components.h"

#include "launcher/forensics/hang_watch.h"
#include "launcher/forensics/straggler_monitor.h"
#include "launcher/timeline/job_timeline.h"

namespace hvdrun::launcher {

JobComponents job_components(const JobSpec& spec, const RunPlan& plan,
                             std::chrono::steady_clock::time_point origin) {
  JobComponents components;
  // The timeline first: it draws a second's collectives before a straggler found in them
  // changes the job.
  if (spec.timeline) components.push_back(std::make_unique<JobTimeline>(spec, plan, origin));
  components.push_back(std::make_unique<HangWatch>(spec));
  components.push_back(std::make_unique<StragglerMonitor>(spec, origin));
  return components;
}

}  // namespace hvdrun::launcher
